package engine

import (
	"fmt"
	"slices"

	"github.com/tallybloom/tallybloom/scaling"
)

// Change is one committed change as a subscriber sees it (see OnCommit):
// enough to replay it on a copy of the filter, such as a Redis mirror.
type Change struct {
	// Seq is the change's sequence number; changes arrive in order, one
	// sequence apart.
	Seq uint64
	// Counters are the counter bytes the change wrote, with their new
	// content: one 64-byte block, or a few 8-byte words of a flat
	// sub-filter. Empty for a change that only retired sub-filters.
	Counters []CounterWrite
	// Tallies are the tallies of the sub-filter the change wrote, after it.
	Tallies *Tallies
	// Directory is the chain's sub-filters after the change, when it opened
	// or retired any; nil otherwise.
	Directory []SubFilterStats
}

// CounterWrite is a span of a sub-filter's counters and its new content.
// Bytes is valid only during the OnCommit call.
type CounterWrite struct {
	Level  int
	Offset uint64
	Bytes  []byte
}

// Tallies are a sub-filter's counts.
type Tallies struct {
	Level   int
	Count   uint64
	MaxID   uint64
	NonZero uint64
}

// OnCommit calls fn with every change committed from now on, in order,
// while the change's lock is still held: fn must be quick, must copy what it
// keeps (the Change and its bytes are reused), must not change them (its
// bytes are the filter's) and must not call the filter. Any number of
// functions may follow one filter, a mirror to each of two Redis
// deployments say; each gets every change, in the order they were given.
//
// It returns the sequence of the last change committed before fn was
// installed, which a mirror starts from, and stop, which ends fn's calls:
// once stop returns, fn is not called again. stop may be called more than
// once, and after Close; not from fn, which holds the lock stop waits for.
// A nil fn is ErrInvalidInput.
func (f *Filter) OnCommit(fn func(*Change)) (seq uint64, stop func(), err error) {
	if fn == nil {
		return 0, nil, fmt.Errorf("%w: OnCommit of a nil function", ErrInvalidInput)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return 0, nil, ErrClosed
	}
	if f.readOnly {
		return 0, nil, ErrReadOnly
	}
	sub := &subscriber{fn: fn}
	f.mu.feed = append(f.mu.feed, sub)
	return f.journal.MemSeq(), func() { f.unsubscribe(sub) }, nil
}

// subscriber is one OnCommit function; its address tells it from another
// subscriber of the same function.
type subscriber struct {
	fn func(*Change)
}

// unsubscribe ends sub's calls.
func (f *Filter) unsubscribe(sub *subscriber) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.feed = slices.DeleteFunc(f.mu.feed, func(s *subscriber) bool { return s == sub })
}

// touched records a span of sub's counters the change in flight writes, for
// the change feed.
func (f *Filter) touchedLocked(sub *scaling.SubFilter, offset uint64, length int) {
	c := &f.mu.change
	if c.touchedN < len(c.touched) {
		c.touched[c.touchedN] = touchedSpan{sub: sub, offset: offset, length: length}
		c.touchedN++
	}
}

// touchedSpan is a span of counters a change writes.
type touchedSpan struct {
	sub    *scaling.SubFilter
	offset uint64
	length int
}

// publishLocked hands the change just committed to the subscribers, which
// the caller has checked there are.
func (f *Filter) publishLocked(c *change) {
	ev := &f.mu.event
	*ev = Change{Seq: f.journal.MemSeq(), Counters: ev.Counters[:0]}
	for _, t := range c.touched[:c.touchedN] {
		ev.Counters = append(ev.Counters, CounterWrite{Level: t.sub.Level, Offset: t.offset, Bytes: spaceOf(t.sub).counters[t.offset:][:t.length]})
	}
	if c.touchedN > 0 {
		sub := c.touched[0].sub
		f.mu.eventTallies = Tallies{Level: sub.Level, Count: sub.Count(), MaxID: sub.MaxID(), NonZero: sub.NonZero()}
		ev.Tallies = &f.mu.eventTallies
	}
	if c.published {
		ev.Directory = f.collectStats().SubFilters
	}
	for _, sub := range f.mu.feed {
		sub.fn(ev)
	}
}
