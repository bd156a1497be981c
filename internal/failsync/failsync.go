//go:build linux

// Package failsync makes the descriptor a test's process holds on a file
// fail fsync for a while, as a failing disk would, for tests of what a
// failed flush does. It is for tests only.
package failsync

import (
	"os"
	"strconv"
	"syscall"
	"testing"
)

// Descriptor is the descriptor this process holds on a file, and the file
// it refers to, saved while a pipe takes its place.
type Descriptor struct {
	t            testing.TB
	fd, saved    int
	pipe, reader *os.File
}

// Find finds the descriptor this process holds on the file at path. It
// goes by the file's inode, not its name, so that a file made under
// another name and renamed to path is found. The test fails if there is
// none.
func Find(t testing.TB, path string) *Descriptor {
	t.Helper()
	var want syscall.Stat_t
	if err := syscall.Stat(path, &want); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino {
			return &Descriptor{t: t, fd: fd, saved: -1}
		}
	}
	t.Fatalf("no descriptor on %s", path)
	return nil
}

// Fail makes the descriptor a pipe's, whose fsync fails with EINVAL as a
// failing disk's would with EIO, until Restore. Mappings of the file are
// untouched. The caller keeps the file's user from using the descriptor
// while it changes, where it must.
func (d *Descriptor) Fail() {
	d.t.Helper()
	if d.saved < 0 {
		saved, err := syscall.Dup(d.fd)
		if err != nil {
			d.t.Fatal(err)
		}
		reader, pipe, err := os.Pipe()
		if err != nil {
			syscall.Close(saved)
			d.t.Fatal(err)
		}
		d.saved, d.reader, d.pipe = saved, reader, pipe
		d.t.Cleanup(func() {
			syscall.Close(d.saved)
			d.reader.Close()
			d.pipe.Close()
		})
	}
	if err := syscall.Dup3(int(d.pipe.Fd()), d.fd, syscall.O_CLOEXEC); err != nil {
		d.t.Fatal(err)
	}
}

// Restore gives the descriptor its file back.
func (d *Descriptor) Restore() {
	d.t.Helper()
	if err := syscall.Dup3(d.saved, d.fd, syscall.O_CLOEXEC); err != nil {
		d.t.Fatal(err)
	}
}
