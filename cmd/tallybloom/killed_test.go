//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An import killed halfway leaves nothing at its path, and the next import
// there succeeds and sweeps away what the killed one left.
func TestKilledImportLeavesNoFile(t *testing.T) {
	exported := filepath.Join(t.TempDir(), "spam.export")
	_, errOut, code := tallybloom(t, "export", filterFile(t), exported)
	require.Equal(t, 0, code, errOut)
	stream, err := os.ReadFile(exported)
	require.NoError(t, err)

	dir := t.TempDir()
	path := filepath.Join(dir, "imported.tb")
	importer := exec.Command(binary, "import", "-", path)
	stdin, err := importer.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, importer.Start())
	_, err = stdin.Write(stream[:len(stream)/2])
	require.NoError(t, err)
	// The importer has read the header and waits for the rest, its file
	// made.
	names := func() []string {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	require.Eventually(t, func() bool { return len(names()) > 0 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, importer.Process.Kill())
	_ = importer.Wait()
	require.NoFileExists(t, path, "killed halfway, the import left nothing at its path")
	require.Len(t, names(), 1)
	assert.True(t, strings.HasPrefix(names()[0], ".imported.tb.creating-"), names())

	_, errOut, code = tallybloomIn(t, string(stream), "import", "-", path)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"imported.tb"}, names(), "the killed import's file is gone")
	_, _, code = tallybloom(t, "verify", path)
	assert.Equal(t, 0, code)
}
