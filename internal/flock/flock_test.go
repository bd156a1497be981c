//go:build unix

package flock

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestASecondLockIsRefusedUntilTheFirstGoes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	first, err := os.Create(path)
	require.NoError(t, err)
	second, err := os.Open(path)
	require.NoError(t, err)
	defer second.Close()

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
