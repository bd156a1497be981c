// Package faults counts the page faults of the process, for benchmarks that
// store into a memory-mapped file: a store into a page the kernel has
// written back since it last changed faults, as does the first touch of a
// page, and a benchmark reports how many of its operations did.
package faults

import "testing"

// Counter counts the process's page faults from its start.
type Counter struct {
	start int64
	ok    bool
}

// Start begins counting.
func Start() Counter {
	n, ok := count()
	return Counter{start: n, ok: ok}
}

// Since is how many page faults, minor and major, the process took since
// c started, and whether the system says.
func (c Counter) Since() (int64, bool) {
	n, ok := count()
	if !ok || !c.ok {
		return 0, false
	}
	return n - c.start, true
}

// Report reports on b the faults since c started, per op of b.N ops, as
// the metric "faults/op" (or "faults/"+unit where an op is not b's op), and
// nothing where the system does not say.
func (c Counter) Report(b *testing.B, ops int, unit string) {
	if n, ok := c.Since(); ok && ops > 0 {
		b.ReportMetric(float64(n)/float64(ops), "faults/"+unit)
	}
}
