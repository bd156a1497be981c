package main

import (
	"fmt"

	"github.com/tallybloom/tallybloom/internal/writeback"
)

// writebackJSON is the kernel's writeback thresholds in stats --json,
// absent where the system does not say (see package writeback).
type writebackJSON struct {
	BackgroundBytes uint64  `json:"background_bytes"`
	LimitBytes      uint64  `json:"limit_bytes"`
	ExpireSeconds   float64 `json:"expire_seconds"`
	// Cgroup: the process's memory cgroup lowered them.
	Cgroup bool `json:"cgroup"`
}

// writebackNow is the kernel's writeback thresholds for this process, or
// nil where the system does not say.
func writebackNow() *writebackJSON {
	l, ok := writeback.Read()
	if !ok {
		return nil
	}
	return &writebackJSON{BackgroundBytes: l.Background, LimitBytes: l.Hard, ExpireSeconds: l.Expire.Seconds(), Cgroup: l.Cgroup}
}

// tooLargeForWriteback says that a filter of size bytes, changed all
// over, is more than the kernel lets stay dirty before it writes pages
// back on its own: it then writes the file back without pause, and each
// store into a page written back faults, waiting for the disk (README,
// What to tune). A copy of a filter's counters in a file (an export) is
// written once and is not concerned.
func tooLargeForWriteback(size uint64, wb *writebackJSON) (string, bool) {
	if wb == nil || size <= wb.BackgroundBytes {
		return "", false
	}
	by := "the kernel's"
	if wb.Cgroup {
		by = "this process's memory cgroup's"
	}
	return fmt.Sprintf("the filter's %s are more than the %s of dirty pages %s writeback lets stay before it writes them back on its own"+
		" (and writers wait past %s): once changes spread over more than that, the file is written back without pause and most changes wait for the disk;"+
		" raise vm.dirty_background_bytes and vm.dirty_bytes above the filter's size (README, What to tune)",
		bytesText(size), bytesText(wb.BackgroundBytes), by, bytesText(wb.LimitBytes)), true
}
