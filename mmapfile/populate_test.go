package mmapfile

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/internal/faults"
)

// populateCase maps 4 MiB of a new file, some of its pages written before
// they are mapped, readies the mapping with ready, and returns the mapping
// and what the file held.
func populateCase(t *testing.T, large bool, ready func(*Region) error) (*Region, []byte) {
	t.Helper()
	f := openTemp(t)
	const n = 4 << 20
	require.NoError(t, f.Reserve(0, n))
	want := make([]byte, n)
	for off := 0; off < n; off += 3 * 4096 {
		want[off+17], want[off+4095] = byte(off>>12), 0xa5
		require.NoError(t, f.WriteAt(want[off:off+4096], int64(off)))
	}
	mapRange := f.Map
	if large {
		mapRange = f.MapLarge
	}
	r, err := mapRange(0, n)
	require.NoError(t, err)
	t.Cleanup(func() { r.Unmap() })
	require.NoError(t, ready(r))
	return r, want
}

// storesFault stores into every page of r and counts the faults they take.
func storesFault(t *testing.T, r *Region) int64 {
	t.Helper()
	c := faults.Start()
	b := r.Bytes()
	for off := 0; off < len(b); off += os.Getpagesize() {
		b[off+100]++
	}
	n, ok := c.Since()
	if !ok {
		t.Skip("page faults are not counted here (this system, or the race detector)")
	}
	return n
}

// Populate, and the stores it falls back on where the kernel lacks
// MADV_POPULATE_WRITE, leave every byte as it was and every page ready for
// stores, which then take no fault: without them, the first store into each
// page faults.
func TestPopulateReadiesEveryPage(t *testing.T) {
	pages := int64(4<<20) / int64(os.Getpagesize())
	cold, _ := populateCase(t, false, func(*Region) error { return nil })
	if n := storesFault(t, cold); n < pages/2 {
		t.Skipf("stores into %d pages not yet touched took %d faults: nothing for Populate to take away here", pages, n)
	}
	ways := map[string]func(*Region) error{
		"Populate":   (*Region).Populate,
		"touchPages": func(r *Region) error { touchPages(r.mapping); return nil },
	}
	for name, ready := range ways {
		t.Run(name, func(t *testing.T) {
			r, want := populateCase(t, false, ready)
			require.True(t, bytes.Equal(want, r.Bytes()), "no byte changed")
			assert.Less(t, storesFault(t, r), pages/8, "stores after %s fault", name)
		})
	}
	t.Run("large", func(t *testing.T) {
		r, want := populateCase(t, true, (*Region).Populate)
		require.True(t, bytes.Equal(want, r.Bytes()), "no byte changed")
	})
}

func TestPopulateRefusesWhatCannotBeWritten(t *testing.T) {
	w := openTemp(t)
	require.NoError(t, w.Reserve(0, 1<<20))
	ro, err := Open(w.Path(), os.O_RDONLY, 0, nil)
	require.NoError(t, err)
	defer ro.Close()
	for _, mapRange := range []func(off, n int64) (*Region, error){ro.Map, ro.MapLarge} {
		r, err := mapRange(0, 1<<20)
		require.NoError(t, err)
		assert.ErrorIs(t, r.Populate(), ErrNotWritable, "a read-only mapping")
		require.NoError(t, r.Unmap())
	}

	unmapped, err := w.Map(0, 1<<20)
	require.NoError(t, err)
	require.NoError(t, unmapped.Unmap())
	assert.ErrorIs(t, unmapped.Populate(), ErrNotWritable, "an unmapped region")

	vacated, err := w.Map(0, 1<<20)
	require.NoError(t, err)
	defer vacated.Unmap()
	require.NoError(t, vacated.Vacate())
	assert.ErrorIs(t, vacated.Populate(), ErrNotWritable, "a vacated region")
}
