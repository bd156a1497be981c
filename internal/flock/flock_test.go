//go:build unix

package flock

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twoOpenFiles opens one new file twice: two open file descriptions,
// whose locks exclude each other as two processes' do.
func twoOpenFiles(t *testing.T) (first, second *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	first, err := os.Create(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = first.Close() })
	second, err = os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = second.Close() })
	return first, second
}

func TestASecondLockIsRefusedUntilTheFirstGoes(t *testing.T) {
	first, second := twoOpenFiles(t)

	require.NoError(t, Lock(first))
	assert.ErrorIs(t, Lock(second), ErrHeld, "another open file of the same file")
	require.NoError(t, Unlock(first))
	require.NoError(t, Lock(second))
	assert.ErrorIs(t, Lock(first), ErrHeld)
	require.NoError(t, first.Close())
}

func TestRemoveUnlockedRemovesOnlyWhatTheDeadLeft(t *testing.T) {
	dir := t.TempDir()
	create := func(name string) *os.File {
		file, err := os.Create(filepath.Join(dir, name))
		require.NoError(t, err)
		return file
	}
	abandoned := create(".f.writing-dead")
	require.NoError(t, abandoned.Close())
	live := create(".f.writing-live")
	defer live.Close()
	require.NoError(t, Lock(live))
	other := create(".g.writing-other") // another name's
	require.NoError(t, other.Close())
	final := create("f")
	require.NoError(t, final.Close())
	require.NoError(t, os.Mkdir(filepath.Join(dir, ".f.writing-dir"), 0o755))

	RemoveUnlocked(filepath.Join(dir, ".f.writing-"))

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{".f.writing-live", ".g.writing-other", "f", ".f.writing-dir"}, names)

	RemoveUnlocked(filepath.Join(dir, "missing", ".f.writing-")) // nothing to read, nothing done
}

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
