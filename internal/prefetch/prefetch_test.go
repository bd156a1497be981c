//go:build unix

package prefetch

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A writer asks for a block before it holds the lock that keeps the block's
// sub-filter mapped, so Line must never fault: not at nil, not where a
// mapping was just taken away. A load in its place would kill the test.
func TestLineNeverFaults(t *testing.T) {
	page := unix.Getpagesize()
	region, err := unix.Mmap(-1, 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	addr := unsafe.Pointer(unsafe.SliceData(region))
	Line(addr)
	region[0] = 7
	Line(addr)
	if region[0] != 7 {
		t.Fatalf("the line holds %d after a prefetch, want 7", region[0])
	}
	if err := unix.Munmap(region); err != nil {
		t.Fatal(err)
	}
	Line(addr) // nothing mapped there now
	Line(nil)
}
