package engine

import (
	"os"

	"github.com/tallybloom/tallybloom/counting"
	"github.com/tallybloom/tallybloom/scaling"
)

// Stats describes a filter at one moment.
type Stats struct {
	// Count is adds minus removes over all retained sub-filters.
	Count uint64
	// EstimatedKeys estimates the distinct keys held, from the share of
	// counters that are zero (a key added twice counts once).
	EstimatedKeys float64
	// SubFilters lists the retained sub-filters, oldest first.
	SubFilters []SubFilterStats
	// MemSeq is the sequence of the last committed change; it grows by one
	// per change. A new file is at 1, its creation.
	MemSeq uint64
	// DiskSeq is the last flushed sequence: every change up to it is on
	// disk. It is 0 while changes made since the last Flush are not.
	DiskSeq uint64
	// CounterBytes is the size of the retained sub-filters' counters.
	CounterBytes uint64
	// PresenceBytes is the size of their presence bits: a quarter of
	// CounterBytes, or 0 with Config.CountersOnly.
	PresenceBytes uint64
	// Recovered reports that Open undid a change a killed process left in
	// flight.
	Recovered bool
	// ReadOnly reports a filter opened with Options.ReadOnly.
	ReadOnly bool
	// FlushError is what the latest flush of a writer returned, nil once
	// one succeeds: how a flush Options.FlushWhenIdle made, which has no
	// caller to return it to, is told.
	FlushError error
	// Config is the filter's persisted parameters, seed included.
	Config Config
}

// SubFilterStats describes one sub-filter.
type SubFilterStats struct {
	// Level fixes the sub-filter's capacity and error rate: Capacity*Growth^Level
	// keys at ErrorRate*(1-Tightening)*Tightening^Level.
	Level int
	// FirstID is the first id the sub-filter owns; it owns every id up to the
	// next sub-filter's FirstID.
	FirstID uint64
	// MaxID is the highest id added to it.
	MaxID uint64
	// Capacity is the number of keys it was built for.
	Capacity uint64
	// Count is its adds minus removes.
	Count uint64
	// Overfilled reports Count above Capacity (adds with older ids, or ids
	// not newer than MaxID when full); its error rate is then above target.
	Overfilled bool
	// ErrorRate is the false-positive rate it was built for at Capacity.
	ErrorRate float64
	// K is the number of counters per key; Blocks the number of 64-byte
	// blocks; Flat reports a flat geometry (a key's counters spread over the
	// whole region, for tiny filters).
	K      int
	Blocks uint64
	Flat   bool
	// NonZero is the number of non-zero counters.
	NonZero uint64
	// Bytes is the size of its counters.
	Bytes uint64
	// EstimatedKeys estimates the distinct keys it holds.
	EstimatedKeys float64
}

// ExpectedFalsePositiveRate is the false-positive rate the sub-filter is
// expected to have at its current count. It costs about a microsecond (up
// to some 50 µs for a tiny flat sub-filter holding a few keys), and a third
// of a millisecond the first time a process asks it of a k.
func (s SubFilterStats) ExpectedFalsePositiveRate() float64 {
	return s.geometry().FalsePositiveRate(s.Count)
}

// Stats reports the filter's state. It reads no counters. In the process
// that writes the filter it is taken between two changes, so MemSeq and the
// sub-filters' tallies agree: with OnCommit and CopyCounters, it is what a
// copy kept up to date by replaying changes starts from. A reader's writer
// is another process, which no lock here holds back, so a reader's Stats
// takes no lock and never waits for its own Snapshot. After Close it
// reports the state at Close.
func (f *Filter) Stats() Stats {
	f.current()
	if f.readOnly {
		if f.closed.Load() {
			return f.mu.closedStats // written before closed was set
		}
		s := f.collectStats()
		if f.closed.Load() {
			// Close overlapped the reads, which may have found its zeros.
			return f.mu.closedStats
		}
		return s
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return f.mu.closedStats
	}
	return f.collectStats()
}

// collectStats reads the state, the directory and the tallies. In a writer the
// caller holds f.mu, so that they agree; in a reader they agree as far as
// its writer's changes allow.
func (f *Filter) collectStats() Stats {
	s := Stats{
		MemSeq:     f.journal.MemSeq(),
		Recovered:  f.recovered,
		ReadOnly:   f.readOnly,
		FlushError: f.mu.flushErr,
		Config:     f.config,
	}
	if state, _, err := f.state.Load(); err == nil && !state.Dirty {
		s.DiskSeq = state.DurableSeq
	}
	params := f.config.params()
	for _, sub := range f.chain.SubFilters() {
		ss := subFilterStats(params, sub)
		s.Count += ss.Count
		s.EstimatedKeys += ss.EstimatedKeys
		s.CounterBytes += ss.Bytes
		s.PresenceBytes += uint64(len(spaceOf(sub).presence))
		s.SubFilters = append(s.SubFilters, ss)
	}
	return s
}

func subFilterStats(params scaling.Params, sub *scaling.SubFilter) SubFilterStats {
	return SubFilterStats{
		Level:         sub.Level,
		FirstID:       sub.FirstID,
		MaxID:         sub.MaxID(),
		Capacity:      sub.Capacity,
		Count:         sub.Count(),
		Overfilled:    sub.Overfilled(),
		ErrorRate:     params.LevelErrorRate(sub.Level),
		K:             sub.Geometry.K,
		Blocks:        sub.Geometry.Blocks,
		Flat:          sub.Geometry.Flat,
		NonZero:       sub.NonZero(),
		Bytes:         sub.Geometry.Bytes(),
		EstimatedKeys: sub.EstimatedKeys(),
	}
}

// geometry is the sub-filter's shape.
func (s SubFilterStats) geometry() counting.Geometry {
	return counting.Geometry{Blocks: s.Blocks, K: s.K, Flat: s.Flat}
}

// LargePageBytes is how much of the filter's counters and presence bits
// the kernel maps with 2 MiB pages in this process right now: with
// Options.LargePages, how much of the filter the kernel and the file
// system gave large pages. It is 0 without LargePages and on platforms
// other than Linux. It counts the pages this process has touched since it
// mapped them; a range the page cache held in 4 KiB pages before stays
// small (see Options.LargePages). A check, not a hot path: it reads
// /proc/self/smaps once for each sub-filter.
func (f *Filter) LargePageBytes() (uint64, error) {
	if !f.current() {
		return 0, ErrClosed
	}
	if !f.readOnly {
		// The writer's sub-filters change only under its lock.
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.closed.Load() {
			return 0, ErrClosed
		}
	}
	var large uint64
	for _, sub := range f.chain.SubFilters() {
		n, err := spaceOf(sub).region.LargeBytes()
		if err != nil {
			return 0, err
		}
		large += uint64(n)
	}
	return large, nil
}

// SubFilterPlan is a sub-filter the chain has not opened yet.
type SubFilterPlan struct {
	// Level fixes its capacity and error rate, as SubFilterStats.Level
	// does: a level a retired sub-filter left is taken again.
	Level     int
	Capacity  uint64
	ErrorRate float64
	// FileBytes is the room it takes in the file, reserved on disk when
	// it opens: its counters and presence bits, in whole pages.
	FileBytes uint64
}

// NextSubFilter is the sub-filter the chain opens next, at the first add
// past the newest's capacity whose id is newer than any the newest holds:
// so that a service can see to the room on disk before that add needs
// it. ok is false where none will open: in a fixed filter, which
// overfills instead, in a chain that holds MaxSubFilters or whose next
// sub-filter could not be built (adds that need it then fail with
// ErrChainFull), and in a closed filter. A check, not a hot path: planning
// a sub-filter takes about a third of a millisecond.
func (f *Filter) NextSubFilter() (plan SubFilterPlan, ok bool) {
	if f.config.Fixed || !f.current() {
		return SubFilterPlan{}, false
	}
	level, ok := f.nextLevel()
	if !ok {
		return SubFilterPlan{}, false
	}
	planned, err := f.config.params().Level(level)
	if err != nil {
		return SubFilterPlan{}, false
	}
	return SubFilterPlan{Level: level, Capacity: planned.Capacity, ErrorRate: planned.ErrorRate, FileBytes: f.regionBytes(planned.Geometry)}, true
}

// nextLevel is the level the chain opens next, if it can open one.
func (f *Filter) nextLevel() (int, bool) {
	if !f.readOnly {
		// The writer's sub-filters change only under its lock.
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.closed.Load() {
			return 0, false
		}
	}
	return f.chain.NextLevel()
}

// Path is the path the filter was opened with.
func (f *Filter) Path() string { return f.path }

// Replaced reports whether the path the filter was opened with now names
// another file: one renamed over it, as Options.Replace does. The filter
// goes on with the file it opened, whose pages it keeps; a reader that
// follows the name looks now and then, and opens the name again when a
// new file has it. An error says the path could not be looked at
// (fs.ErrNotExist: it names nothing, for now).
func (f *Filter) Replaced() (bool, error) {
	if f.closed.Load() {
		return false, ErrClosed
	}
	now, err := os.Stat(f.path)
	if err != nil {
		return false, err
	}
	opened, err := f.file.Info()
	if err != nil {
		return false, err
	}
	return !os.SameFile(opened, now), nil
}

// Config is the filter's persisted parameters, seed included.
func (f *Filter) Config() Config { return f.config }
