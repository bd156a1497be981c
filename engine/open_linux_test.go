//go:build linux

package engine

import (
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
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
	page := os.Getpagesize()
	// mincore wants a page-aligned address; the counters start on a page.
	vec := make([]byte, (len(b)+page-1)/page)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	require.Zero(t, errno, "mincore: %v", errno)
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// Open refuses what is not a file by saying what it is, at once: a
// directory would otherwise read as a filter cut short, and opening a named
// pipe would wait for a writer. Neither is a damaged filter.
func TestOpenRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe")
	require.NoError(t, unix.Mkfifo(pipe, 0o644))
	for path, what := range map[string]string{dir: "is a directory", pipe: "is a named pipe", os.DevNull: "is a device"} {
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
