//go:build unix

package faults

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCountsTheFaultsOfStoresIntoNewPages stores into every page of a new
// file mapping once, each such store a fault, and then into each again,
// which takes none.
func TestCountsTheFaultsOfStoresIntoNewPages(t *testing.T) {
	const pages = 256
	mem := newPages(t, pages)

	c := Start()
	for i := 0; i < len(mem); i += os.Getpagesize() {
		mem[i] = 1
	}
	n, ok := c.Since()
	if !ok && raceDetector {
		t.Skip("the race detector's shadow memory faults too")
	}
	if !ok {
		t.Fatal("getrusage gave no count")
	}
	if n < pages {
		t.Fatalf("%d stores into new pages counted %d faults", pages, n)
	}

	c = Start()
	for i := 0; i < len(mem); i += os.Getpagesize() {
		mem[i] = 2
	}
	if n, _ := c.Since(); n >= pages/2 {
		t.Fatalf("%d stores into pages already stored into counted %d faults", pages, n)
	}
}

// TestPausedFaultsAreLeftOut stores into new pages while the count is
// paused, which it leaves out, and into more after it resumes, which it
// counts.
func TestPausedFaultsAreLeftOut(t *testing.T) {
	const pages = 256
	mem := newPages(t, 2*pages)
	page := os.Getpagesize()

	c := Start()
	c.Pause()
	for i := 0; i < pages*page; i += page {
		mem[i] = 1
	}
	c.Resume()
	n, ok := c.Since()
	if !ok {
		t.Skip("no count of faults here, or the race detector's")
	}
	if n >= pages/2 {
		t.Fatalf("%d stores into new pages while paused counted %d faults", pages, n)
	}
	for i := pages * page; i < len(mem); i += page {
		mem[i] = 1
	}
	if n, _ := c.Since(); n < pages {
		t.Fatalf("%d stores into new pages after Resume counted %d faults", pages, n)
	}
}

// newPages maps a new file of n pages, shared and writable.
func newPages(t *testing.T, n int) []byte {
	t.Helper()
	size := n * os.Getpagesize()
	f, err := os.Create(t.TempDir() + "/pages")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Truncate(int64(size)); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	return mem
}
