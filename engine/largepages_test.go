package engine

import (
	"os"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/mmapfile"
)

// LargePages changes how counters are mapped, never what the file holds:
// a filter written with it reads the same without it, and processes may
// differ in it while they share the file.
func TestLargePagesKeepTheFormat(t *testing.T) {
	cfg := Config{Capacity: 200_000, ErrorRate: 0.01, Seed: 9}
	large := &Options{LargePages: true}

	plainPath, largePath := tempPath(t), tempPath(t)+".large"
	plain, err := Create(plainPath, cfg, nil)
	require.NoError(t, err)
	f, err := Create(largePath, cfg, large)
	require.NoError(t, err)
	reader, err := Open(largePath, &Options{ReadOnly: true})
	require.NoError(t, err)
	defer reader.Close()
	for i := range uint64(250_000) { // past capacity: a second sub-filter
		require.NoError(t, plain.Add(key(i), i))
		require.NoError(t, f.Add(key(i), i))
	}
	require.Len(t, f.Stats().SubFilters, 2)
	for i := range uint64(250_000) {
		if !reader.Contains(key(i)) {
			t.Fatalf("a reader without large pages lost key %d", i)
		}
	}
	require.NoError(t, plain.Close())
	require.NoError(t, f.Close())
	assert.Equal(t, readFile(t, plainPath), readFile(t, largePath), "the same bytes either way")

	again, err := Open(largePath, large)
	require.NoError(t, err)
	for i := range uint64(250_000) {
		if !again.Contains(key(i)) {
			t.Fatalf("reopened with large pages, key %d is lost", i)
		}
	}
	require.NoError(t, again.Remove(key(7), 7))
	require.NoError(t, again.Close())
	require.NoError(t, Verify(largePath))
}

// With LargePages the counters of a large sub-filter are mapped large where
// the platform allows; without, never.
func TestLargePagesAreUsed(t *testing.T) {
	for _, want := range []bool{true, false} {
		f, err := Create(tempPath(t), Config{Capacity: 1_000_000, ErrorRate: 0.01, Fixed: true}, &Options{LargePages: want})
		require.NoError(t, err)
		counters := spaceOf(f.chain.SubFilters()[0])
		touch(counters.counters)
		large, err := counters.region.LargeBytes()
		require.NoError(t, err)
		reported, err := f.LargePageBytes()
		require.NoError(t, err)
		assert.Equal(t, uint64(large), reported, "the filter says what its mappings hold")
		require.NoError(t, f.Close())
		_, err = f.LargePageBytes()
		assert.ErrorIs(t, err, ErrClosed)
		if want && !platformMapsLarge(t) {
			t.Skip("this platform keeps file pages small")
		}
		assert.Equal(t, want, large > 0, "LargePages %v: %d bytes mapped large", want, large)
	}
}

// touch stores to every page of b without changing it, as a change's first
// store does.
func touch(b []byte) {
	for i := 0; i < len(b); i += PageSize {
		atomic.AddUint32((*uint32)(unsafe.Pointer(&b[i])), 0)
	}
}

// platformMapsLarge reports whether mmapfile gets large pages here at all,
// for a file whose pages are first touched by stores.
func platformMapsLarge(t *testing.T) bool { return probeLarge(t, touch) }

// probeLarge reports whether a large mapping of a new file gets large pages
// here when first is what first touches its pages.
func probeLarge(t *testing.T, first func([]byte)) bool {
	file, err := mmapfile.Open(tempPath(t)+".probe", os.O_RDWR|os.O_CREATE, 0o644, nil)
	require.NoError(t, err)
	defer file.Close()
	require.NoError(t, file.Reserve(0, 8<<20))
	r, err := file.MapLarge(0, 8<<20)
	require.NoError(t, err)
	defer r.Unmap()
	first(r.Bytes())
	large, err := r.LargeBytes()
	require.NoError(t, err)
	return large > 0
}

// load reads every page of b, as lookups do.
func load(b []byte) {
	for i := 0; i < len(b); i += PageSize {
		atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[i])))
	}
}

// Lookups alone get large pages: a service that only reads its filter, or
// a read-only process, gains them as a writer does, where the kernel
// brings the pages in through the filter's mapping.
func TestLookupsAloneGetLargePages(t *testing.T) {
	path := tempPath(t)
	f, err := Create(path, Config{Capacity: 4_000_000, ErrorRate: 0.01, Fixed: true, Seed: 5}, &Options{LargePages: true})
	require.NoError(t, err)
	defer f.Close()
	reader, err := Open(path, &Options{ReadOnly: true, LargePages: true})
	require.NoError(t, err)
	defer reader.Close()
	for i := range uint64(200_000) {
		require.False(t, reader.Contains(key(i)), "an empty filter holds no key")
	}
	large, err := reader.LargePageBytes()
	require.NoError(t, err)
	if !probeLarge(t, load) {
		t.Skip("this platform keeps pages first loaded small")
	}
	presence := spaceOf(reader.chain.SubFilters()[0]).presence
	assert.Positive(t, large, "lookups over %d bytes of presence bits", len(presence))
}
