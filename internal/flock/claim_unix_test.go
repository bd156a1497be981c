//go:build unix

package flock

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A file is made, then locked: in the instant between, another process's
// RemoveUnlocked may take it for a dead one's. claim tells its maker.
func TestClaimSaysWhetherTheFileWasTakenBeforeItsLock(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, ".f.writing-")
	create := func(name string) *os.File {
		file, err := os.OpenFile(prefix+name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		require.NoError(t, err)
		t.Cleanup(func() { file.Close() })
		return file
	}

	mine := create("mine")
	claimed, locked, err := claim(mine)
	require.NoError(t, err)
	require.True(t, claimed && locked)
	RemoveUnlocked(prefix)
	require.FileExists(t, mine.Name(), "claimed, it stays")

	removed := create("removed")
	RemoveUnlocked(prefix) // before the maker locked it
	claimed, locked, err = claim(removed)
	require.NoError(t, err)
	require.False(t, claimed || locked, "its name is gone: the lock alone would not show it")

	held := create("held")
	cleaner, err := os.Open(held.Name()) // locked by a cleaner, about to remove it
	require.NoError(t, err)
	defer cleaner.Close()
	require.NoError(t, Lock(cleaner))
	claimed, locked, err = claim(held)
	require.NoError(t, err)
	require.False(t, claimed || locked)
}
