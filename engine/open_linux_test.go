//go:build linux

package engine

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tallybloom/tallybloom/internal/resident"
)

// Open maps the file and reads the header only: with the file dropped from
// the page cache, no page of counters is resident after Open.
func TestOpenReadsNoCounters(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 2_000_000, ErrorRate: 0.01, Growth: 1})
	for i := range uint64(10_000) {
		require.NoError(t, f.Add(key(i), i))
	}
	require.NoError(t, f.Close())
	dropPageCache(t, f.Path())

	g, err := Open(f.Path(), nil)
	require.NoError(t, err)
	defer g.Close()
	region := spaceOf(g.chain.SubFilters()[0]).region.Bytes()
	require.Greater(t, len(region), 8<<20)
	assert.Zero(t, residentPages(t, region), "Open touched no counter and no presence bit")

	require.True(t, g.Contains(key(1)))
	assert.Positive(t, residentPages(t, region), "the check itself is sound: a lookup faults a page in")
}

func dropPageCache(t *testing.T, path string) {
	t.Helper()
	file, err := os.Open(path)
	require.NoError(t, err)
	defer file.Close()
	require.NoError(t, unix.Fadvise(int(file.Fd()), 0, 0, unix.FADV_DONTNEED))
}

func residentPages(t *testing.T, b []byte) int {
	t.Helper()
	// mincore wants a page-aligned address; the counters start on a page.
	n, err := resident.Pages(b)
	require.NoError(t, err, "mincore")
	return n
}

// Open refuses what is not a file by saying what it is, at once: a
// directory would otherwise read as a filter cut short, and opening a named
// pipe would wait for a writer. Neither is a damaged filter.
func TestOpenRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe")
	require.NoError(t, unix.Mkfifo(pipe, 0o644))
	socket := filepath.Join(dir, "socket")
	l, err := net.Listen("unix", socket)
	require.NoError(t, err)
	defer l.Close()
	for path, what := range map[string]string{dir: "is a directory", pipe: "is a named pipe", socket: "is a socket", os.DevNull: "is a device"} {
		for _, ro := range []bool{false, true} {
			done := make(chan error, 1)
			go func() {
				f, err := Open(path, &Options{ReadOnly: ro})
				if err == nil {
					f.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				require.ErrorIs(t, err, ErrInvalidInput, "%s, read-only %v", path, ro)
				assert.NotErrorIs(t, err, ErrCorrupt, path)
				assert.Contains(t, err.Error(), what)
			case <-time.After(10 * time.Second):
				t.Fatalf("Open(%s), read-only %v, still waiting after 10s", path, ro)
			}
		}
	}
	assert.ErrorIs(t, Verify(dir), ErrInvalidInput)
}

// A closed filter's addresses, which Close left readable for lookups still
// in flight, with zeros of no file, are given back once the Filter is garbage
// collected: its header's and every sub-filter's, the retired one's too.
// The count of regions held for collection, which decides whether a refused
// mapping is worth a collection (mapFreeing), falls back to where it was.
func TestClosedFilterGivesItsAddressesBack(t *testing.T) {
	var addresses []uintptr
	before := held.Load()
	func() {
		// Not newTestFilter, whose cleanup would keep the Filter reachable.
		f, err := Create(tempPath(t), Config{Capacity: 1_000, ErrorRate: 0.01, Growth: 1}, nil)
		require.NoError(t, err)
		for i := range uint64(3_000) { // three sub-filters
			require.NoError(t, f.Add(key(i), i))
		}
		addresses = append(addresses, uintptr(unsafe.Pointer(unsafe.SliceData(f.page0))))
		for _, sub := range f.chain.SubFilters() {
			addresses = append(addresses, uintptr(unsafe.Pointer(unsafe.SliceData(spaceOf(sub).region.Bytes()))))
		}
		require.Len(t, addresses, 4)
		_, err = f.DropBefore(1_500) // the first one retires
		require.NoError(t, err)
		require.Len(t, f.chain.SubFilters(), 2)
		require.NoError(t, f.Close())
		assert.Equal(t, len(addresses), vacated(t, addresses), "vacated at Close")
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		left, still := vacated(t, addresses), held.Load()
		if left == 0 && still <= before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d mappings still there after the Filter was collected; %d regions held, %d before", left, len(addresses), still, before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// vacated counts the addresses that /proc/self/maps shows in a read-only
// private mapping of no file: what Close leaves. (The runtime maps its own
// memory writable or inaccessible, so an address it reuses is not counted.)
func vacated(t *testing.T, addresses []uintptr) (n int) {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	for line := range strings.Lines(string(maps)) {
		var start, end uintptr
		fields := strings.Fields(line)
		if _, err := fmt.Sscanf(line, "%x-%x", &start, &end); err != nil || len(fields) != 5 || fields[1] != "r--p" {
			continue
		}
		for _, a := range addresses {
			if start <= a && a < end {
				n++
			}
		}
	}
	return n
}

// An import that fails after it mapped the file it was making removes the
// file and unmaps it: no mapping of it stays behind, holding the disk room
// of a file no name reaches.
func TestFailedImportLeavesNoMapping(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 1_000, ErrorRate: 0.01, Seed: 2})
	for i := range uint64(500) {
		require.NoError(t, f.Add(key(i), i))
	}
	var stream bytes.Buffer
	require.NoError(t, f.Export(&stream))
	dir := t.TempDir()
	path := filepath.Join(dir, "imported.tb")
	_, err := Import(path, bytes.NewReader(stream.Bytes()[:stream.Len()-1]), nil)
	require.ErrorIs(t, err, ErrCorrupt)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "the file being made is removed")
	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	assert.NotContains(t, string(maps), dir, "a mapping of the file being made stays")
}
