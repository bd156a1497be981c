// Package writeback reads, on Linux, the amounts of dirty file pages at
// which the kernel starts to write a machine's dirty pages back on its own
// and at which it holds writers back until it has (vm.dirty_background_*,
// vm.dirty_*), lowered where the process's memory cgroup has a limit, as
// the kernel lowers them. A memory-mapped filter larger than the first,
// whose changes spread over all of it, is written back without pause, and
// its stores fault and wait for the disk (README, What to tune): the
// command warns of it.
//
// What it reads is the kernel's settings and /proc/meminfo at one moment;
// the kernel works the thresholds out from memory as it is at each
// moment, so the figures are close, not exact.
//
// # Concurrency
//
// Read may be called from any goroutine.
package writeback
