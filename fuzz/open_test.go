package fuzz

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/seqno"
)

// fixedBoot makes a file left dirty by this harness read as a process crash
// of this boot, so the recovery path is fuzzed too.
var fixedBoot = func() (seqno.BootID, error) { return seqno.BootID{0x7b}, nil }

// sentinels are the errors a file may legitimately produce.
var sentinels = []error{engine.ErrCorrupt, engine.ErrVersion, engine.ErrUnclean, engine.ErrChainFull, engine.ErrIDRetired, engine.ErrNotFound}

func requireSentinel(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	var pathErr *fs.PathError
	require.ErrorAs(t, err, &pathErr, "%s: an error that is no sentinel: %v", what, err)
}

func key(i uint64) []byte { return binary.LittleEndian.AppendUint64([]byte("fuzz-"), i) }

// seedFiles are valid files: clean, and left dirty with a change in flight.
func seedFiles(f *testing.F) [][]byte {
	dir := f.TempDir()
	clean := filepath.Join(dir, "clean.tb")
	flt, err := engine.Create(clean, engine.Config{Capacity: 20, ErrorRate: 0.1, Growth: 1, Seed: 1}, &engine.Options{BootID: fixedBoot})
	require.NoError(f, err)
	for i := range uint64(70) {
		require.NoError(f, flt.Add(key(i), i))
	}
	_, err = flt.DropBefore(25)
	require.NoError(f, err)
	require.NoError(f, flt.Close())
	b, err := os.ReadFile(clean)
	require.NoError(f, err)
	return [][]byte{b}
}

func FuzzOpen(f *testing.F) {
	for _, seed := range seedFiles(f) {
		f.Add(seed)
		damaged := append([]byte(nil), seed...)
		damaged[engine.PageSize+20] ^= 0xff // a directory entry
		f.Add(damaged)
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		path := filepath.Join(memDir(t), "f.tb")
		require.NoError(t, os.WriteFile(path, file, 0o644))
		for _, readOnly := range []bool{true, false} {
			flt, err := engine.Open(path, &engine.Options{ReadOnly: readOnly, BootID: fixedBoot})
			if err != nil {
				require.Nil(t, flt, "an error comes with no filter")
				requireSentinel(t, err, "open")
				continue
			}
			flt.Contains(key(1))
			s := flt.Stats()
			if !readOnly && len(s.SubFilters) > 0 {
				// Add only where no new sub-filter is needed: a damaged
				// file may ask for one of many gigabytes, and would get it.
				newest := s.SubFilters[len(s.SubFilters)-1]
				if newest.Count < newest.Capacity {
					requireSentinel(t, flt.Add(key(2), newest.FirstID), "add")
				}
				requireSentinel(t, flt.Remove(key(2), newest.FirstID), "remove")
				_, err := flt.DropBefore(newest.FirstID)
				requireSentinel(t, err, "drop")
			}
			requireSentinel(t, flt.Close(), "close")
		}
		requireSentinel(t, engine.Verify(path), "verify")
	})
}
