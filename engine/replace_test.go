package engine

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/mmapfile"
)

// Options.Replace makes a filter file again in place of one a machine crash
// left unclean, from an export of a good copy, as mirror.Restore does from
// Redis; it refuses a file a writer has open, a file that is not a filter,
// and leaves the old file as it was when the new one cannot be made.
func TestReplace(t *testing.T) {
	cfg := Config{Capacity: 1000, ErrorRate: 0.01, Seed: 5}
	good := newTestFilter(t, cfg)
	for i := range uint64(100) {
		require.NoError(t, good.Add(key(i), i))
	}
	var export bytes.Buffer
	require.NoError(t, good.Export(&export))

	// The unclean file: a writer on boot 1 changed it since its last flush,
	// and the machine crashed.
	path := tempPath(t)
	crashed, err := Create(path, cfg, bootOf(1))
	require.NoError(t, err)
	require.NoError(t, crashed.Add(key(7), 7))
	unclean := readFile(t, path)
	abandon(t, crashed)
	_, err = Open(path, bootOf(2))
	require.ErrorIs(t, err, ErrUnclean)

	_, err = Import(path, bytes.NewReader(export.Bytes()), bootOf(2))
	require.ErrorIs(t, err, ErrExists, "without Replace")
	replace := bootOf(2)
	replace.Replace = true
	_, err = Import(path, bytes.NewReader(export.Bytes()[:export.Len()/2]), replace)
	require.Error(t, err)
	assert.Equal(t, unclean, readFile(t, path), "a failed import leaves the old file as it was")

	f, err := Import(path, bytes.NewReader(export.Bytes()), replace)
	require.NoError(t, err)
	for i := range uint64(100) {
		require.True(t, f.Contains(key(i)))
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing left beside it")

	// f is the file's writer now: the file is not replaced under it.
	before := readFile(t, path)
	_, err = Create(path, cfg, &Options{Replace: true})
	require.ErrorIs(t, err, ErrLocked)
	assert.Equal(t, before, readFile(t, path))
	require.NoError(t, f.Close())

	g, err := Create(path, Config{Capacity: 10, ErrorRate: 0.1}, &Options{Replace: true})
	require.NoError(t, err, "a clean filter file is replaced too")
	assert.Equal(t, uint64(10), g.Config().Capacity)
	require.NoError(t, g.Close())

	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(text, []byte("TLYBLOO, not a filter\n"), 0o644))
	others := []string{text, dir}
	if runtime.GOOS != "windows" {
		// (Windows makes symbolic links for privileged users only.)
		link := filepath.Join(dir, "link.tb")
		require.NoError(t, os.Symlink(path, link))
		others = append(others, link)
	}
	for _, other := range others {
		_, err := Create(other, cfg, &Options{Replace: true})
		require.ErrorIs(t, err, ErrNotFilter, other)
		assert.ErrorContains(t, err, "will not replace "+other)
	}
	assert.Equal(t, "TLYBLOO, not a filter\n", string(readFile(t, text)))

	fresh := filepath.Join(dir, "fresh.tb")
	h, err := Create(fresh, cfg, &Options{Replace: true})
	require.NoError(t, err, "nothing to replace: made as without Replace")
	require.NoError(t, h.Close())
}

// A reader of a file another file was renamed over is told so, and goes on
// with the file it opened.
func TestReplacedSaysAnotherFileHasTheName(t *testing.T) {
	path := tempPath(t)
	cfg := Config{Capacity: 1000, ErrorRate: 0.01, Seed: 5}
	w, err := Create(path, cfg, nil)
	require.NoError(t, err)
	require.NoError(t, w.Add(key(1), 1))
	require.NoError(t, w.Close())
	r, err := Open(path, &Options{ReadOnly: true})
	require.NoError(t, err)
	replaced, err := r.Replaced()
	require.NoError(t, err)
	assert.False(t, replaced)

	if !mmapfile.ReplacesOpenFiles {
		// Windows renames over no file a process has open: the reader
		// keeps the new filter out, and the error says why.
		before := readFile(t, path)
		_, err := Create(path, cfg, &Options{Replace: true})
		require.ErrorIs(t, err, ErrLocked)
		assert.ErrorContains(t, err, "a process has it open or mapped, a reader too")
		assert.Equal(t, before, readFile(t, path), "left as it was")
		entries, err := os.ReadDir(filepath.Dir(path))
		require.NoError(t, err)
		assert.Len(t, entries, 1, "nothing left beside it")
		require.NoError(t, r.Close())
		return
	}
	g, err := Create(path, cfg, &Options{Replace: true})
	require.NoError(t, err)
	require.NoError(t, g.Close())
	replaced, err = r.Replaced()
	require.NoError(t, err)
	assert.True(t, replaced)
	assert.True(t, r.Contains(key(1)), "the file it opened serves on")

	require.NoError(t, os.Remove(path))
	_, err = r.Replaced()
	assert.ErrorIs(t, err, fs.ErrNotExist)
	require.NoError(t, r.Close())
	_, err = r.Replaced()
	assert.ErrorIs(t, err, ErrClosed)
}

// After ErrUnclean, a copy and the caller's own log of changes make the
// filter again exactly when the log is replayed from the change after the
// copy's sequence, the restored filter's MemSeq. A copy taken after the
// last Flush (an export, a mirror that kept up) is ahead of DurableSeq,
// and the changes it holds, replayed from DurableSeq + 1, would count
// twice: a key added twice stays after its one remove.
func TestUncleanFileIsMadeAgainFromACopyAndTheChangesAfterIt(t *testing.T) {
	cfg := Config{Capacity: 1000, ErrorRate: 0.01, Seed: 3}
	path := tempPath(t)
	f, err := Create(path, cfg, bootOf(1))
	require.NoError(t, err)
	type change struct {
		remove bool
		k, seq uint64
	}
	apply := func(g *Filter, c change) error {
		if c.remove {
			return g.Remove(key(c.k), c.k)
		}
		return g.Add(key(c.k), c.k)
	}
	var log []change // the caller's: each change with its sequence
	run := func(remove bool, from, to uint64) {
		for k := from; k < to; k++ {
			c := change{remove: remove, k: k}
			require.NoError(t, apply(f, c))
			c.seq = f.Stats().MemSeq
			log = append(log, c)
		}
	}
	run(false, 0, 100)
	require.NoError(t, f.Flush())
	run(false, 100, 150)
	run(true, 10, 20)
	var copied bytes.Buffer
	require.NoError(t, f.Export(&copied))
	copySeq := f.Stats().MemSeq
	run(false, 150, 180)
	run(true, 100, 110)
	var want bytes.Buffer
	require.NoError(t, f.Export(&want))
	abandon(t, f)

	_, err = Open(path, bootOf(2))
	var unclean *UncleanError
	require.ErrorAs(t, err, &unclean)
	require.Less(t, unclean.DurableSeq, copySeq, "the copy is ahead of the durable sequence")
	replace := bootOf(2)
	replace.Replace = true
	// remade imports the copy at path, replays the changes of the log
	// after the sequence from gives, and returns how many were refused.
	remade := func(path string, from func(*Filter) uint64) (g *Filter, export []byte, refused int) {
		g, err := Import(path, bytes.NewReader(copied.Bytes()), replace)
		require.NoError(t, err)
		t.Cleanup(func() { g.Close() })
		after := from(g)
		for _, c := range log {
			if c.seq > after && apply(g, c) != nil {
				refused++
			}
		}
		var got bytes.Buffer
		require.NoError(t, g.Export(&got))
		return g, got.Bytes(), refused
	}

	g, got, refused := remade(path, func(g *Filter) uint64 {
		assert.Equal(t, copySeq, g.Stats().MemSeq, "a copy keeps its sequence")
		return g.Stats().MemSeq
	})
	assert.Zero(t, refused)
	assert.Equal(t, want.Bytes(), got, "the copy and the changes after its sequence are the filter")
	for k := range uint64(180) {
		if k < 10 || k >= 20 && k < 100 || k >= 110 {
			assert.True(t, g.Contains(key(k)), "key %d", k)
		}
	}

	// Replayed twice, a remove may be refused, or take another key's count.
	wrong, got, _ := remade(filepath.Join(t.TempDir(), "wrong.tb"), func(*Filter) uint64 { return unclean.DurableSeq })
	assert.NotEqual(t, want.Bytes(), got, "replayed from DurableSeq + 1, the copy's changes count twice")
	for k := uint64(100); k < 110; k++ {
		assert.True(t, wrong.Contains(key(k)), "key %d, added twice and removed once, is still there", k)
	}
}
