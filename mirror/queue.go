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
// mirror's lock. The shipper reads a batch of them without the lock, so a
// push never writes over a waiting change: it appends past them, or copies
// them into a new array. An array that empties is used again, so a mirror
// that keeps up with its filter allocates no queue room.
type queue struct {
	all  []change // from the array's start; all[head:] wait
	head int
}

func (q *queue) len() int { return len(q.all) - q.head }

// waiting is the changes that wait, oldest first.
func (q *queue) waiting() []change { return q.all[q.head:] }

func (q *queue) push(c change) {
	if len(q.all) == cap(q.all) && q.head > 0 {
		// Full, with room at the front that Redis acknowledged: a new
		// array for the changes that wait, rather than a copy of both.
		live := q.all[q.head:]
		q.all, q.head = append(make([]change, 0, max(2*len(live), 64)), live...), 0
	}
	q.all = append(q.all, c)
}

// drop forgets the n oldest changes, which the shipper no longer reads.
func (q *queue) drop(n int) {
	clear(q.all[q.head : q.head+n]) // their bytes may go
	q.head += n
	if q.head == len(q.all) {
		q.all, q.head = q.all[:0], 0
	}
}

// abandon forgets every change, leaving the array to a batch the shipper
// may still be reading.
func (q *queue) abandon() { q.all, q.head = nil, 0 }

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
