//go:build linux

package engine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// cappedOpens runs the capped child (openCapped) on path with room bytes
// of address space to spare and returns what it said.
func cappedOpens(t *testing.T, path string, room uint64, opens int) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=capped", "TALLYBLOOM_FILE="+path,
		"TALLYBLOOM_ROOM="+strconv.FormatUint(room, 10), "TALLYBLOOM_OPENS="+strconv.Itoa(opens))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "child said %q, and on stderr %q", out, stderr.String())
	return strings.TrimSpace(string(out))
}

// A closed filter gives its mappings' addresses back once the garbage
// collector finds its sub-filters unreachable, since a lookup may still be
// reading them. In a process whose collector seldom runs (a large heap
// that barely grows), opening and closing a large filter again and again
// ran out of address space: the 4 GiB filter of the bench's BenchmarkOpen
// failed after some thousands of opens. Open now collects what closed
// filters hold when a mapping fails for want of room, and tries again.
func TestOpeningAgainAndAgainDoesNotRunOutOfAddressSpace(t *testing.T) {
	f, region := cappedFilter(t)

	// Room for three mappings at once, and the runtime's: twelve opens
	// need the first ones' given back.
	require.Equal(t, "ok 12", cappedOpens(t, f.Path(), 3*region+runtimeRoom, 12))
}

// runtimeRoom is the address space the capped child leaves the Go runtime
// beside the filters' mappings. The collection that Open runs when a
// mapping is refused may grow the heap, and the runtime reserves a heap
// arena of 64 MiB at a time: a child left less, under a busy machine,
// once died of it ("fatal error: out of memory" in the collector).
const runtimeRoom = 80 << 20

// cappedFilter is a closed filter for the capped child, whose sub-filter's
// region is larger than runtimeRoom.
func cappedFilter(t *testing.T) (*Filter, uint64) {
	t.Helper()
	f := newTestFilter(t, Config{Capacity: 10_000_000, ErrorRate: 0.01, Growth: 1})
	region := uint64(len(spaceOf(f.chain.SubFilters()[0]).region.Bytes()))
	require.Greater(t, region, uint64(runtimeRoom))
	require.NoError(t, f.Close())
	return f, region
}

// A mapping the system refuses is not a damaged file: Open says why it
// failed and does not claim corruption, which would send its caller to
// rebuild or restore a sound file.
func TestAMappingRefusedIsNotCorruption(t *testing.T) {
	f, _ := cappedFilter(t)

	said := cappedOpens(t, f.Path(), runtimeRoom, 1)
	require.True(t, strings.HasPrefix(said, "error 0 corrupt=false enomem=true "), "the child said %q", said)
	require.Contains(t, said, "mmap")
	require.Contains(t, said, f.Path())
}

// openCapped is the child of the address space tests: with the garbage
// collector off and its address space capped at TALLYBLOOM_ROOM bytes
// beyond what it has mapped already, it opens and closes path
// TALLYBLOOM_OPENS times, reading, and says "ok N" or where and how Open
// failed.
func openCapped(path string) int {
	room, _ := strconv.ParseUint(os.Getenv("TALLYBLOOM_ROOM"), 10, 64)
	opens, _ := strconv.Atoi(os.Getenv("TALLYBLOOM_OPENS"))
	debug.SetGCPercent(-1)
	size, err := mappedBytes()
	if err != nil {
		fmt.Println("setup", err)
		return 1
	}
	limit := size + room
	if err := unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
		fmt.Println("setup", err)
		return 1
	}
	for i := range opens {
		f, err := Open(path, &Options{ReadOnly: true})
		if err != nil {
			fmt.Printf("error %d corrupt=%t enomem=%t %v\n", i, errors.Is(err, ErrCorrupt), errors.Is(err, syscall.ENOMEM), err)
			return 0
		}
		if err := f.Close(); err != nil {
			fmt.Println("close", err)
			return 1
		}
	}
	fmt.Println("ok", opens)
	return 0
}

// mappedBytes is the process's address space in use (VmSize, Linux).
func mappedBytes() (uint64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmSize in /proc/self/status")
}
