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
	size := pages * os.Getpagesize()
	f, err := os.Create(t.TempDir() + "/pages")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)

	c := Start()
	for i := 0; i < size; i += os.Getpagesize() {
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
	for i := 0; i < size; i += os.Getpagesize() {
		mem[i] = 2
	}
	if n, _ := c.Since(); n >= pages/2 {
		t.Fatalf("%d stores into pages already stored into counted %d faults", pages, n)
	}
}
