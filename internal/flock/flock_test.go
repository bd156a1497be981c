//go:build unix || windows

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

// A lock keeps other writers out and no reader: Windows locks are
// mandatory for the byte range they cover, and the lock's byte lies past
// any file's end.
func TestALockLetsOthersReadAndWrite(t *testing.T) {
	first, second := twoOpenFiles(t)
	_, err := first.Write([]byte("tallybloom"))
	require.NoError(t, err)
	require.NoError(t, Lock(first))
	got := make([]byte, 10)
	_, err = second.ReadAt(got, 0)
	require.NoError(t, err)
	assert.Equal(t, "tallybloom", string(got))
	writer, err := os.OpenFile(first.Name(), os.O_RDWR, 0)
	require.NoError(t, err)
	defer writer.Close()
	_, err = writer.WriteAt([]byte("T"), 0)
	assert.NoError(t, err)
}
