package writeback

import (
	"bufio"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
)

// Limits are the kernel's writeback thresholds at one moment.
type Limits struct {
	// Background is the amount of dirty pages above which the kernel
	// writes pages back without pause.
	Background uint64
	// Hard is the amount above which a process that dirties a page waits
	// for writeback.
	Hard uint64
	// Expire is how long a page may stay dirty before the kernel writes it
	// back, below Background too (vm.dirty_expire_centisecs).
	Expire time.Duration
	// Cgroup says that the process's memory cgroup lowered the thresholds.
	Cgroup bool
}

// Read reads the thresholds that hold for this process. ok is false where
// the system does not say (not Linux, or /proc unreadable).
func Read() (l Limits, ok bool) { return read(os.DirFS("/")) }

// read reads the thresholds from root, a file system laid out as "/" is.
func read(root fs.FS) (Limits, bool) {
	vm := func(name string) (uint64, bool) { return number(root, "proc/sys/vm/"+name) }
	bgBytes, ok1 := vm("dirty_background_bytes")
	bgRatio, ok2 := vm("dirty_background_ratio")
	hardBytes, ok3 := vm("dirty_bytes")
	hardRatio, ok4 := vm("dirty_ratio")
	expire, ok5 := vm("dirty_expire_centisecs")
	avail, ok6 := dirtyable(root)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return Limits{}, false
	}
	l := Limits{
		Background: threshold(bgBytes, bgRatio, avail),
		Hard:       threshold(hardBytes, hardRatio, avail),
		Expire:     time.Duration(expire) * 10 * time.Millisecond,
	}
	if l.Background >= l.Hard {
		l.Background = l.Hard / 2 // as the kernel does
	}
	if cgroupAvail, ok := cgroupDirtyable(root, avail); ok && cgroupAvail < avail {
		// The kernel applies both thresholds to the cgroup's memory too, in
		// the same proportion to what it can dirty; the lower one holds.
		l.Background = scale(l.Background, cgroupAvail, avail)
		l.Hard = scale(l.Hard, cgroupAvail, avail)
		l.Cgroup = true
	}
	return l, true
}

// threshold is a threshold set in bytes, or, where that is 0, as a ratio
// in percent of the memory pages may be dirtied in.
func threshold(bytes, ratio, avail uint64) uint64 {
	if bytes != 0 {
		return bytes
	}
	return avail / 100 * ratio
}

// scale is n * num / den without overflow for any memory size.
func scale(n, num, den uint64) uint64 {
	if den == 0 {
		return 0
	}
	return uint64(float64(n) * (float64(num) / float64(den)))
}

// dirtyable is the memory the kernel lets file pages be dirtied in: free
// memory and the file pages of the page cache.
func dirtyable(root fs.FS) (uint64, bool) {
	kb, ok := fields(root, "proc/meminfo", "MemFree:", "Active(file):", "Inactive(file):")
	if !ok {
		return 0, false
	}
	return (kb[0] + kb[1] + kb[2]) << 10, true
}

// cgroupDirtyable is the memory this process's cgroup (version 2) lets it
// dirty file pages in, where a limit on it or an ancestor says: its file
// pages and what it may still take, if that is less than the machine's.
func cgroupDirtyable(root fs.FS, avail uint64) (uint64, bool) {
	dir, ok := cgroupDir(root)
	if !ok {
		return 0, false
	}
	headroom, limited := avail, false
	for d := dir; ; d = path.Dir(d) {
		max, okMax := number(root, path.Join("sys/fs/cgroup", d, "memory.max"))
		current, okCur := number(root, path.Join("sys/fs/cgroup", d, "memory.current"))
		if okMax && okCur {
			limited = true
			headroom = min(headroom, max-min(max, current))
		}
		if d == "." {
			break
		}
	}
	if !limited {
		return 0, false
	}
	file, ok := fields(root, path.Join("sys/fs/cgroup", dir, "memory.stat"), "active_file", "inactive_file")
	if !ok {
		return 0, false
	}
	return file[0] + file[1] + headroom, true
}

// cgroupDir is this process's cgroup in the unified (version 2) hierarchy.
func cgroupDir(root fs.FS) (string, bool) {
	b, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		return "", false
	}
	for line := range strings.Lines(string(b)) {
		if dir, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			if dir = strings.Trim(path.Clean("/"+dir), "/"); dir == "" {
				dir = "."
			}
			return dir, true
		}
	}
	return "", false
}

// number reads a file that holds one decimal number; "max" is not one.
func number(root fs.FS, name string) (uint64, bool) {
	b, err := fs.ReadFile(root, name)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

// fields reads the numbers after each of names at the start of a line of
// the file name (as /proc/meminfo and memory.stat lay them out), in order.
func fields(root fs.FS, name string, names ...string) ([]uint64, bool) {
	file, err := root.Open(name)
	if err != nil {
		return nil, false
	}
	defer file.Close()
	values := make([]uint64, len(names))
	found := 0
	scan := bufio.NewScanner(file)
	for scan.Scan() {
		words := strings.Fields(scan.Text())
		if len(words) < 2 {
			continue
		}
		for i, n := range names {
			if words[0] == n {
				v, err := strconv.ParseUint(words[1], 10, 64)
				if err != nil {
					return nil, false
				}
				values[i] = v
				found++
			}
		}
	}
	return values, found == len(names) && scan.Err() == nil
}
