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
