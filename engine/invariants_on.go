//go:build invariants

package engine

import "fmt"

// crashHook is a test's way to stop a change at a crash point, as a kill
// would: at runs at each point and stops the change by panicking.
type crashHook struct{ at func(crashSite) }

// crashPoint gives a test the chance to stop the change in flight at site.
func crashPoint(f *Filter, site crashSite) {
	if f.crash.at != nil {
		f.crash.at(site)
	}
}

// invariantsMaxBytes bounds the filters checked after every change: the
// check reads every counter.
const invariantsMaxBytes = 128 << 10

// checkInvariants checks, after every change and before it commits, that
// each sub-filter's tallies agree with its counters: the non-zero counters
// are counted exactly, and while nothing saturates the counters sum to k
// times the count; and that its presence bits agree with its counters. It
// reads every counter, so it runs only on filters of at most
// invariantsMaxBytes.
func checkInvariants(f *Filter) {
	var total uint64
	for _, sub := range f.chain.SubFilters() {
		total += sub.Geometry.Bytes()
	}
	if total > invariantsMaxBytes {
		return
	}
	for _, sub := range f.chain.SubFilters() {
		sum, nonZero, saturated := sub.Filter().Tally()
		if nonZero != sub.NonZero() {
			panic(fmt.Sprintf("engine: invariant: level %d has %d non-zero counters, tallies say %d", sub.Level, nonZero, sub.NonZero()))
		}
		if saturated == 0 && sum != uint64(sub.Geometry.K)*sub.Count() {
			panic(fmt.Sprintf("engine: invariant: level %d counters sum to %d, want k=%d x count=%d", sub.Level, sum, sub.Geometry.K, sub.Count()))
		}
		if stale := sub.Filter().StalePresence(); stale > 0 {
			panic(fmt.Sprintf("engine: invariant: level %d has %d blocks whose presence bits disagree with their counters", sub.Level, stale))
		}
	}
}
