// Package faults counts the page faults of the process, for benchmarks that
// store into a memory-mapped file: a store into a page the kernel has
// written back since it last changed faults, as does the first touch of a
// page, and a benchmark reports how many of its operations did.
package faults

import "testing"

// Counter counts the process's page faults from its start, leaving out
// those between a Pause and the Resume after it.
type Counter struct {
	start  int64
	paused int64
	ok     bool
}

// Start begins counting.
func Start() Counter {
	n, ok := count()
	ok = ok && !raceDetector
	return Counter{start: n, ok: ok}
}

// Pause stops counting until Resume, for work a benchmark does with its
// timer stopped.
func (c *Counter) Pause() { c.paused, _ = count() }

// Resume counts again, leaving out the faults since Pause.
func (c *Counter) Resume() {
	n, _ := count()
	c.start += n - c.paused
}

// Since is how many page faults, minor and major, the process took since
// c started, and whether the system says. Under the race detector it says
// nothing: its shadow memory faults too.
func (c Counter) Since() (int64, bool) {
	n, ok := count()
	if !ok || !c.ok {
		return 0, false
	}
	return n - c.start, true
}

// Report reports on b the faults since c started, divided among ops
// operations, as the metric "faults/"+unit: b.N and "op" for a benchmark
// whose op is one operation, or b.N*1024 and "key" for one whose op is a
// batch of 1024 keys. Where the system does not count faults, and under
// the race detector, it reports nothing.
func (c Counter) Report(b *testing.B, ops int, unit string) {
	if n, ok := c.Since(); ok && ops > 0 {
		b.ReportMetric(float64(n)/float64(ops), "faults/"+unit)
	}
}
