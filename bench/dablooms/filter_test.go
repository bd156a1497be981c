//go:build dablooms && cgo

package dablooms

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFilterAddsChecksAndRemoves(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.bin")
	f, err := New(10_000, 0.01, path)
	require.NoError(t, err)
	keys := make([][]byte, 5_000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "https://example.com/%d", i)
		f.Add(keys[i], 1)
	}
	for _, k := range keys {
		require.True(t, f.Check(k), "an added key is found")
	}
	false_ := 0
	for i := range 10_000 {
		if f.Check(fmt.Appendf(nil, "never/%d", i)) {
			false_++
		}
	}
	require.Less(t, false_, 200, "false positives of keys never added, at a configured 1%")
	require.Greater(t, f.Bytes(), uint64(10_000*4*9/8), "the file holds 4-bit counters for the capacity")
	for _, k := range keys {
		f.Remove(k, 1)
	}
	for _, k := range keys {
		require.False(t, f.Check(k), "a removed key is gone once its counters are back at zero")
	}
	f.Add(nil, 1)
	require.True(t, f.Check(nil), "the empty key is a key")
	require.NoError(t, f.Close())
	require.NoFileExists(t, path)
}

func TestFilterOpensASubFilterForAHigherIDOnceFull(t *testing.T) {
	f, err := New(100, 0.01, filepath.Join(t.TempDir(), "d.bin"))
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, 1, f.SubFilters())
	for i := range 500 {
		f.Add(fmt.Appendf(nil, "same-id/%d", i), 1)
	}
	require.Equal(t, 1, f.SubFilters(), "keys of one id stay in the first sub-filter, however many")
	// The first add of a higher id opens the second sub-filter, which
	// takes capacity-1 keys; the add of a higher id after that opens the
	// third.
	f.Add([]byte("id/2"), 2)
	require.Equal(t, 2, f.SubFilters())
	id := uint64(3)
	for f.SubFilters() < 3 {
		f.Add(fmt.Appendf(nil, "id/%d", id), id)
		id++
	}
	require.Equal(t, uint64(2+100), id, "the third sub-filter opened at the add after the second held 99 keys")
}

func TestNewRefusesAPathItCannotCreate(t *testing.T) {
	_, err := New(100, 0.01, filepath.Join(t.TempDir(), "missing", "d.bin"))
	require.ErrorIs(t, err, ErrCreate)
}

// BenchmarkCall is the cost of a call from Go into C, which dablooms' every
// add, check and remove pays when a Go program calls it.
func BenchmarkCall(b *testing.B) {
	x := 0
	for b.Loop() {
		x = Call(x)
	}
}
