//go:build unix

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/internal/flock"
)

// withOpenBeside has outputs make their files with open for the test.
func withOpenBeside(t *testing.T, open func(name string, flag int, perm fs.FileMode) (*os.File, error)) {
	was := openBeside
	openBeside = open
	t.Cleanup(func() { openBeside = was })
}

// An output to the same name that starts in the instant between another's
// making its file and locking it takes the file for a dead command's and
// removes it (flock.RemoveUnlocked). The first output makes another file
// and writes its name whole all the same.
func TestAnOutputWhoseFileWasTakenInItsFirstInstantMakesAnother(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "export")
	taken := 0
	withOpenBeside(t, func(name string, flag int, perm fs.FileMode) (*os.File, error) {
		file, err := os.OpenFile(name, flag, perm)
		if err == nil && taken < 2 {
			taken++
			flock.RemoveUnlocked(filepath.Join(dir, ".export.writing-")) // another export, starting
		}
		return file, err
	})
	o, err := createOutput(out, filepath.Join(dir, "filter"))
	require.NoError(t, err)
	assert.Equal(t, 2, taken, "two files were taken before the third held")
	_, err = o.Write([]byte("the export"))
	require.NoError(t, err)
	require.NoError(t, o.commit())
	content, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "the export", string(content))
	left, err := filepath.Glob(filepath.Join(dir, ".export.writing-*"))
	require.NoError(t, err)
	assert.Empty(t, left)
}

// An output whose every file is taken gives up with an error, and leaves
// its name as it was.
func TestAnOutputWhoseFilesAreAllTakenSaysSo(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "export")
	require.NoError(t, os.WriteFile(out, []byte("an older export"), 0o644))
	withOpenBeside(t, func(name string, flag int, perm fs.FileMode) (*os.File, error) {
		file, err := os.OpenFile(name, flag, perm)
		flock.RemoveUnlocked(filepath.Join(dir, ".export.writing-"))
		return file, err
	})
	_, err := createOutput(out, filepath.Join(dir, "filter"))
	require.ErrorIs(t, err, engine.ErrLocked)
	assert.True(t, strings.HasPrefix(err.Error(), "create "+out+": "), err.Error())
	content, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "an older export", string(content))
}
