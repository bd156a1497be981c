package engine

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/counting"
	"github.com/tallybloom/tallybloom/scaling"
	"github.com/tallybloom/tallybloom/seqno"
)

// key is a 24-byte key, like a short URL hash.
func key(i uint64) []byte {
	return binary.LittleEndian.AppendUint64([]byte("tallybloom-key-"), i)
}

func tempPath(t testing.TB) string { return filepath.Join(t.TempDir(), "filter.tb") }

func newTestFilter(t testing.TB, cfg Config) *Filter {
	t.Helper()
	f, err := Create(tempPath(t), cfg, nil)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func reopen(t testing.TB, f *Filter, opts *Options) *Filter {
	t.Helper()
	require.NoError(t, f.Close())
	g, err := Open(f.Path(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })
	return g
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// scribble writes n stray bytes into the file at path at offset, as
// another program would, past the engine.
func scribble(t testing.TB, path string, offset int64, n int) {
	t.Helper()
	other, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = other.WriteAt(bytes.Repeat([]byte{0x5a}, n), offset)
	require.NoError(t, err)
	require.NoError(t, other.Close())
}

// bootOf returns an Options whose boot id is fixed.
func bootOf(id byte) *Options {
	return &Options{BootID: func() (seqno.BootID, error) { return seqno.BootID{id}, nil }}
}

// abandon drops a writer as a killed process would: no flush, no clean
// state, the lock released with the process's descriptors.
func abandon(t testing.TB, f *Filter) {
	t.Helper()
	f.mu.Lock()
	f.closed.Store(true) // and so the look of Options.FlushWhenIdle ends
	f.mu.Unlock()
	f.unmapAll()
	require.NoError(t, f.file.Close())
}

// routedHolds reports whether the sub-filter that owns id holds key: the
// exact condition under which Remove must succeed.
func routedHolds(f *Filter, k []byte, id uint64) bool {
	subs := f.chain.SubFilters()
	for i := len(subs) - 1; i >= 0; i-- {
		if subs[i].FirstID <= id {
			p := probeOf(subs[i], f.hasher.Key(k))
			return subs[i].Count() > 0 && subs[i].Filter().Test(p)
		}
	}
	return false
}

// probeOf is where the key of hash h lies in sub.
func probeOf(sub *scaling.SubFilter, h counting.Hash) *counting.Probe {
	var p counting.Probe
	sub.Filter().Locate(h, &p)
	return &p
}
