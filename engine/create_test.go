//go:build unix

package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/mmapfile"
)

// A filter file appears at its path only whole: Create and Import build it
// under a name of their own, and what a killed creator left is removed by
// the next creation of that path, unless its creator still runs.
func TestCreatedFilesAppearWhole(t *testing.T) {
	src := newTestFilter(t, Config{Capacity: 500, ErrorRate: 0.01, Growth: 1, Seed: 6})
	fillChain(t, src, 2, 0)
	var export bytes.Buffer
	require.NoError(t, src.Export(&export))

	dir := t.TempDir()
	path := filepath.Join(dir, "f.tb")
	_, err := Import(path, bytes.NewReader(export.Bytes()[:export.Len()/2]), nil)
	require.ErrorIs(t, err, ErrCorrupt, "an export cut short")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "a failed import leaves nothing")

	abandoned := buildingPrefix(path) + "killed"
	require.NoError(t, os.WriteFile(abandoned, []byte("half a filter"), 0o644))
	busyName := buildingPrefix(path) + "running"
	busy, err := mmapfile.Open(busyName, os.O_RDWR|os.O_CREATE, 0o644, nil)
	require.NoError(t, err)
	require.NoError(t, busy.Lock())
	defer busy.Close()

	f, err := Import(path, bytes.NewReader(export.Bytes()), nil)
	require.NoError(t, err)
	assert.Equal(t, path, f.Path())
	assert.Equal(t, src.Stats().SubFilters, f.Stats().SubFilters)
	require.NoError(t, f.Close())
	var names []string
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{".f.tb.creating-running", "f.tb"}, names, "the abandoned file is gone, the running one stays")
	require.NoError(t, Verify(path))

	_, err = Create(path, Config{Capacity: 10, ErrorRate: 0.1}, nil)
	require.ErrorIs(t, err, ErrExists)
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "nothing more beside it")
}
