package resident

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pages is how many pages of b the page cache holds. b must start on a
// page boundary.
func Pages(b []byte) (int, error) {
	page := os.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if errno != 0 {
		return 0, errno
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n, nil
}

// Share is the share of the file at path's pages that the page cache
// holds.
func Share(path string) (float64, error) {
	file, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil || info.Size() == 0 {
		return 0, err
	}
	m, err := unix.Mmap(int(file.Fd()), 0, int(info.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, err
	}
	defer unix.Munmap(m)
	n, err := Pages(m)
	page := os.Getpagesize()
	return float64(n) / float64((len(m)+page-1)/page), err
}
