package writeback

import (
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gib is typed, so that its multiples are not ints, which overflow on 32-bit
// platforms.
const gib uint64 = 1 << 30

// machine is a root with the kernel's defaults (thresholds as ratios) and
// 10 GiB that file pages may be dirtied in: 8 GiB free, 2 GiB of them.
func machine() fstest.MapFS {
	text := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	return fstest.MapFS{
		"proc/sys/vm/dirty_background_bytes": text("0\n"),
		"proc/sys/vm/dirty_background_ratio": text("10\n"),
		"proc/sys/vm/dirty_bytes":            text("0\n"),
		"proc/sys/vm/dirty_ratio":            text("20\n"),
		"proc/sys/vm/dirty_expire_centisecs": text("3000\n"),
		"proc/meminfo": text("MemTotal:       16777216 kB\nMemFree:         8388608 kB\nMemAvailable:   10485760 kB\n" +
			"Active(file):     1048576 kB\nInactive(file):   1048576 kB\nDirty:               128 kB\n"),
		"proc/self/cgroup": text("0::/\n"),
	}
}

func set(root fstest.MapFS, name, value string) fstest.MapFS {
	root[name] = &fstest.MapFile{Data: []byte(value + "\n")}
	return root
}

func TestRatiosOfTheMemoryPagesMayBeDirtiedIn(t *testing.T) {
	l, ok := read(machine())
	require.True(t, ok)
	assert.InDelta(t, float64(gib), float64(l.Background), 1<<10, "a tenth of 10 GiB")
	assert.InDelta(t, float64(2*gib), float64(l.Hard), 1<<10, "a fifth")
	assert.Equal(t, 30*time.Second, l.Expire)
	assert.False(t, l.Cgroup)
}

func TestThresholdsSetInBytes(t *testing.T) {
	root := set(set(machine(), "proc/sys/vm/dirty_background_bytes", "268435456"), "proc/sys/vm/dirty_bytes", "1073741824")
	l, ok := read(set(root, "proc/sys/vm/dirty_expire_centisecs", "360000"))
	require.True(t, ok)
	assert.Equal(t, Limits{Background: 256 << 20, Hard: gib, Expire: time.Hour}, l)
}

func TestABackgroundThresholdAboveTheHardOneIsHalfOfIt(t *testing.T) {
	root := set(machine(), "proc/sys/vm/dirty_background_bytes", "8589934592")
	l, ok := read(set(root, "proc/sys/vm/dirty_bytes", "2147483648"))
	require.True(t, ok)
	assert.Equal(t, 2*gib, l.Hard)
	assert.Equal(t, gib, l.Background, "the kernel's rule")
}

// In a cgroup with a memory limit (a container's), the kernel works the
// thresholds out from the cgroup's file pages and what it may still take
// too, and the lower holds: a filter far below the machine's thresholds
// can be far above a container's.
func TestACgroupsMemoryLimitLowersThem(t *testing.T) {
	root := set(machine(), "proc/self/cgroup", "0::/kubepods/pod1")
	set(root, "sys/fs/cgroup/kubepods/pod1/memory.max", "2147483648")
	set(root, "sys/fs/cgroup/kubepods/pod1/memory.current", "1610612736")
	set(root, "sys/fs/cgroup/kubepods/pod1/memory.stat", "anon 1073741824\nactive_file 268435456\ninactive_file 268435456\n")
	l, ok := read(root)
	require.True(t, ok)
	// 512 MiB of file pages and 512 MiB of headroom: a tenth of 10 GiB.
	assert.True(t, l.Cgroup)
	assert.InDelta(t, float64(gib)/10, float64(l.Background), 1<<10)
	assert.InDelta(t, float64(2*gib)/10, float64(l.Hard), 1<<10)

	// An ancestor's tighter limit holds for its children.
	set(root, "sys/fs/cgroup/kubepods/memory.max", "1073741824")
	set(root, "sys/fs/cgroup/kubepods/memory.current", "1006632960") // 64 MiB left
	l, ok = read(root)
	require.True(t, ok)
	assert.InDelta(t, float64(gib)*576/10240, float64(l.Background), 1<<10, "64 MiB left and 512 MiB of file pages")

	// No limit ("max"), or a cgroup without the memory controller: the
	// machine's thresholds.
	set(root, "sys/fs/cgroup/kubepods/pod1/memory.max", "max")
	set(root, "sys/fs/cgroup/kubepods/memory.max", "max")
	l, ok = read(root)
	require.True(t, ok)
	assert.False(t, l.Cgroup)
	assert.InDelta(t, float64(gib), float64(l.Background), 1<<10)
}

func TestASystemThatDoesNotSay(t *testing.T) {
	for _, gone := range []string{"proc/sys/vm/dirty_ratio", "proc/sys/vm/dirty_background_bytes", "proc/meminfo"} {
		root := machine()
		delete(root, gone)
		_, ok := read(root)
		assert.False(t, ok, "without %s", gone)
	}
	_, ok := read(set(machine(), "proc/meminfo", "MemFree: 8388608 kB\n"))
	assert.False(t, ok, "a meminfo without the file pages")
	_, ok = read(set(machine(), "proc/sys/vm/dirty_ratio", "twenty"))
	assert.False(t, ok)
}
