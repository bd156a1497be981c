package mirror

import "github.com/tallybloom/tallybloom/engine"

// change is a committed change, copied out of the engine.
type change struct {
	seq        uint64
	counters   []engine.CounterWrite
	tallies    engine.Tallies
	hasTallies bool
	dir        []engine.SubFilterStats
}

// queue holds the changes waiting for Redis, oldest first, under the
// mirror's lock, in segments of segChanges: a queue that grows never copies
// what it holds, and holds no more than one segment beyond its changes. The
// shipper reads a batch of them without the lock, so a push never writes
// over a waiting change: it appends past them, in the last segment or a
// new one. A segment that empties is used again, so a mirror that keeps up
// with its filter allocates no queue room.
type queue struct {
	segs  [][]change // segs[0][head:] wait first, then every later segment
	head  int
	n     int      // changes waiting
	spare []change // an emptied segment, used again
}

// segChanges is the changes a segment holds: some 200 KB.
const segChanges = 2048

func (q *queue) len() int { return q.n }

// first is up to n of the oldest changes, from one segment.
func (q *queue) first(n int) []change {
	if q.n == 0 {
		return nil
	}
	s := q.segs[0][q.head:]
	return s[:min(n, len(s))]
}

// each calls fn with the waiting changes, oldest first, a segment's worth
// at a time, until fn returns false.
func (q *queue) each(fn func([]change) bool) {
	for i, s := range q.segs {
		if i == 0 {
			s = s[q.head:]
		}
		if len(s) > 0 && !fn(s) {
			return
		}
	}
}

func (q *queue) push(c change) {
	last := len(q.segs) - 1
	if last < 0 || len(q.segs[last]) == cap(q.segs[last]) {
		seg := q.spare
		if seg == nil {
			seg = make([]change, 0, segChanges)
		}
		q.segs, q.spare = append(q.segs, seg), nil
		last++
	}
	q.segs[last] = append(q.segs[last], c)
	q.n++
}

// drop forgets the n oldest changes, which the shipper no longer reads.
func (q *queue) drop(n int) {
	for n > 0 {
		s := q.segs[0]
		k := min(n, len(s)-q.head)
		clear(s[q.head : q.head+k]) // their bytes may go
		q.head, q.n, n = q.head+k, q.n-k, n-k
		if q.head < len(s) {
			continue
		}
		// The segment is spent: kept for the next, or filled again in
		// place if it was the last.
		q.head = 0
		if len(q.segs) == 1 {
			q.segs[0] = s[:0]
			continue
		}
		if q.spare == nil {
			q.spare = s[:0]
		}
		q.segs[0] = nil
		q.segs = q.segs[1:]
	}
}

// abandon forgets every change, leaving the segments to a batch the
// shipper may still be reading.
func (q *queue) abandon() { q.segs, q.head, q.n = nil, 0, 0 }

// slab hands out room for the bytes and writes of queued changes from
// large allocations, one change's worth at a time. Only enqueue uses it,
// and the engine calls enqueue one change at a time.
type slab struct {
	bytes  []byte
	writes []engine.CounterWrite
}

const (
	slabBytes  = 64 << 10
	slabWrites = 1024
)

// copyBytes copies b into the slab.
func (s *slab) copyBytes(b []byte) []byte {
	if len(b) > cap(s.bytes)-len(s.bytes) {
		s.bytes = make([]byte, 0, max(slabBytes, len(b)))
	}
	start := len(s.bytes)
	s.bytes = append(s.bytes, b...)
	return s.bytes[start:len(s.bytes):len(s.bytes)]
}

// newWrites returns room for n counter writes.
func (s *slab) newWrites(n int) []engine.CounterWrite {
	if n > cap(s.writes)-len(s.writes) {
		s.writes = make([]engine.CounterWrite, 0, max(slabWrites, n))
	}
	start := len(s.writes)
	s.writes = s.writes[:start+n]
	return s.writes[start : start+n : start+n]
}
