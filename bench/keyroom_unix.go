//go:build unix

package bench

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Generated keys, and the slice headers that point at them, live in memory
// mapped outside the Go heap, which the collector neither owns nor scans.
// testing collects before every run of every benchmark, and once the 64M
// benchmarks' 20 million or so keys were on the heap each collection
// scanned their headers for 120 to 150 ms. Kept outside, the keys took the
// short report's benchmarks from 292 to 247 s on a busy machine.
// Nothing on the heap is ever stored in this memory (a header points at a
// key of the same room), and it is never given back: a benchmark process
// keeps its keys to the end.

// keyRoom is n zeroed bytes outside the heap.
func keyRoom(n int) []byte {
	if n == 0 {
		return nil
	}
	room, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		panic(fmt.Sprintf("bench: %d bytes of room for keys: %v", n, err))
	}
	return room
}

// keyHeaders is room for n keys' slice headers outside the heap; each must
// point at room keyRoom gave.
func keyHeaders(n int) [][]byte {
	room := keyRoom(n * int(unsafe.Sizeof([]byte(nil))))
	if room == nil {
		return nil
	}
	return unsafe.Slice((*[]byte)(unsafe.Pointer(unsafe.SliceData(room))), n)
}
