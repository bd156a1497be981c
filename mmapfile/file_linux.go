//go:build linux

package mmapfile

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

func reserve(f *File, off, n int64) error {
	if n == 0 {
		return nil
	}
	err := unix.Fallocate(int(f.file.Fd()), 0, off, n)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return growByWriting(f, off, n)
	}
	if err != nil {
		return &fs.PathError{Op: "fallocate", Path: f.path, Err: err}
	}
	return nil
}

func release(f *File, off, n int64) error {
	if n == 0 {
		return nil
	}
	err := unix.Fallocate(int(f.file.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return zeroRange(f, off, n)
	}
	if err != nil {
		return &fs.PathError{Op: "fallocate", Path: f.path, Err: err}
	}
	return nil
}

// largePage is the size of a page-cache page one page-table entry maps
// (a PMD on x86-64 and arm64 with 4 KiB base pages).
const largePage = 2 << 20

// mapLarge maps length bytes of the file from the page-aligned start at an
// address congruent to start modulo largePage, so every largePage-aligned
// range of the file inside the mapping can be mapped by one entry, and asks
// for huge pages. The kernel decides: where it keeps small pages the mapping
// works as Map's does.
//
// The address is found by reserving length+largePage bytes of inaccessible
// anonymous memory and mapping the file over the right part of it; the
// slack stays reserved and inaccessible until Unmap releases the whole
// reservation.
func mapLarge(f *File, start, length int64) (*Region, error) {
	if length > maxMapping-largePage {
		return nil, unix.EINVAL
	}
	reservation, err := unix.Mmap(-1, 0, int(length)+largePage, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(reservation)))
	skew := (uintptr(start) - base) % largePage
	prot := unix.PROT_READ
	if f.writable {
		prot |= unix.PROT_WRITE
	}
	_, _, errno := unix.Syscall6(unix.SYS_MMAP, base+skew, uintptr(length), uintptr(prot), unix.MAP_SHARED|unix.MAP_FIXED, f.file.Fd(), uintptr(start))
	if errno != 0 {
		_ = unix.Munmap(reservation)
		return nil, errno
	}
	mapping := reservation[skew:][:length:length]
	_ = unix.Madvise(mapping, unix.MADV_HUGEPAGE)
	return &Region{
		mapping:  mapping,
		reserved: reservation,
		flush:    func() error { return unix.Msync(mapping, unix.MS_SYNC) },
		unmap:    func() error { return unix.Munmap(reservation) },
	}, nil
}

// populate asks the kernel to fault b's pages in writable, all in one call
// (MADV_POPULATE_WRITE, Linux 5.14): on ext4 in a virtual machine, 0.6 to
// 8 µs a page, where the first stores into a new file's pages in random
// order took 19 to 35 µs a page. A kernel without it gets a store into
// each page, in order (about 4.5 µs a page there).
func populate(b []byte) error {
	err := unix.Madvise(b, unix.MADV_POPULATE_WRITE)
	for errors.Is(err, unix.EINTR) {
		err = unix.Madvise(b, unix.MADV_POPULATE_WRITE)
	}
	if errors.Is(err, unix.EINVAL) {
		touchPages(b)
		return nil
	}
	return err
}

// largeBytes reads the kernel's account of the mapping at addr: the bytes
// of file pages it maps with single large entries (FilePmdMapped).
func largeBytes(addr uintptr) (int64, error) {
	smaps, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer smaps.Close()
	in := false
	s := bufio.NewScanner(smaps)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && !strings.HasSuffix(fields[0], ":") {
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(addr) >= start && uint64(addr) < end
			continue
		}
		if in && fields[0] == "FilePmdMapped:" && len(fields) >= 2 {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("smaps: %q: %w", s.Text(), err)
			}
			return kb << 10, nil
		}
	}
	return 0, s.Err()
}
