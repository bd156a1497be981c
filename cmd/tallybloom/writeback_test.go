package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// stats warns of a filter whose counters and presence bits are more than
// the kernel's background writeback threshold, names a memory cgroup's
// where that is the one, and says nothing where the system does not say.
func TestStatsWarnsOfAFilterLargerThanWritebackLeaves(t *testing.T) {
	stats := statsJSON{File: "f.tb", CounterBytes: 8 << 20, PresenceBytes: 2 << 20}
	text := func(wb *writebackJSON) string {
		var b strings.Builder
		s := stats
		s.Writeback = wb
		printStatsTo(&b, s)
		return b.String()
	}
	warned := text(&writebackJSON{BackgroundBytes: 4 << 20, LimitBytes: 8 << 20, ExpireSeconds: 30})
	assert.Contains(t, warned, "\nwarning     the filter's 10.0 MiB are more than the 4.0 MiB of dirty pages the kernel's writeback lets stay before it writes them back on its own (and writers wait past 8.0 MiB): ")
	cgroup := text(&writebackJSON{BackgroundBytes: 4 << 20, LimitBytes: 8 << 20, ExpireSeconds: 30, Cgroup: true})
	assert.Contains(t, cgroup, "the 4.0 MiB of dirty pages this process's memory cgroup's writeback lets stay")

	for _, quiet := range []*writebackJSON{nil, {BackgroundBytes: 10 << 20, LimitBytes: 20 << 20, ExpireSeconds: 30}} {
		assert.NotContains(t, text(quiet), "warning", "thresholds %+v", quiet)
	}
}
