package main

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/internal/writeback"
)

// create warns of a filter larger than the dirty pages this machine's
// kernel lets stay before it writes them back on its own, and only of
// such a filter; stats --json gives the thresholds it compares with.
func TestCreateWarnsOfAFilterTheKernelWritesBackWithoutPause(t *testing.T) {
	limits, ok := writeback.Read()
	require.True(t, ok, "Linux says")
	cfg := engine.Config{Capacity: limits.Background / 4, ErrorRate: 0.01, Fixed: true}
	fp, err := engine.FootprintOf(cfg)
	require.NoError(t, err)
	require.Greater(t, fp.FileBytes, limits.Background)

	path := filepath.Join(t.TempDir(), "f.tb")
	_, errOut, _ := tallybloom(t, "create", "--dry-run", path, "--capacity", strconv.FormatUint(cfg.Capacity, 10), "--error-rate", "0.01", "--fixed")
	assert.Contains(t, errOut, "warning: the filter's "+bytesText(fp.FileBytes)+" are more than the ")
	assert.Contains(t, errOut, "raise vm.dirty_background_bytes and vm.dirty_bytes above the filter's size")

	// The same filter for a thousand keys is far below it.
	_, errOut, code := tallybloom(t, "create", path, "--capacity", "1000", "--error-rate", "0.01", "--fixed")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, errOut, "warning")
	out, errOut, code := tallybloom(t, "stats", path)
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "warning")
	out, _, code = tallybloom(t, "stats", "--json", path)
	require.Equal(t, 0, code)
	var s statsJSON
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.NotNil(t, s.Writeback)
	assert.Positive(t, s.Writeback.BackgroundBytes)
	assert.Less(t, s.Writeback.BackgroundBytes, s.Writeback.LimitBytes)
	assert.Positive(t, s.Writeback.ExpireSeconds)
}
