package mirror

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
)

func seqs(cs []change) []uint64 {
	var out []uint64
	for _, c := range cs {
		out = append(out, c.seq)
	}
	return out
}

// waiting is every change q holds, oldest first.
func (q *queue) waiting() []change {
	var all []change
	q.each(func(w []change) bool { all = append(all, w...); return true })
	return all
}

// A queue keeps its changes in order; a batch taken from it is never
// written over by later pushes, however the queue grows; it holds at most
// one segment more than its changes need, and a spent segment is used
// again.
func TestQueue(t *testing.T) {
	var q queue
	for s := range uint64(10) {
		q.push(change{seq: s + 1})
	}
	q.drop(2)
	batch := q.first(4)
	for s := range uint64(3 * segChanges) { // grows by segments
		q.push(change{seq: s + 11})
	}
	assert.Equal(t, []uint64{3, 4, 5, 6}, seqs(batch), "the batch as taken")
	q.drop(4)
	assert.Equal(t, 3*segChanges+4, q.len())
	assert.Equal(t, uint64(7), q.first(1)[0].seq)
	assert.Len(t, q.first(3*segChanges), segChanges-6, "a batch from one segment")

	next := uint64(3*segChanges + 11)
	for q.len() < 5*segChanges { // a backlog that never empties
		q.drop(3)
		for range 4 {
			q.push(change{seq: next})
			next++
		}
	}
	assert.LessOrEqual(t, len(q.segs), q.len()/segChanges+2, "acknowledged room is let go")
	w := q.waiting()
	require.Len(t, w, q.len())
	for i := 1; i < len(w); i++ {
		require.Equal(t, w[i-1].seq+1, w[i].seq, "in order")
	}

	q.drop(q.len())
	assert.Zero(t, q.len())
	assert.Empty(t, q.first(1))
	// AllocsPerRun counts the whole process's allocations, and an earlier
	// test's client may still be dialling a server that has gone: an
	// allocation of the queue's shows in every measurement, a stray one in
	// few. The least of three is the queue's.
	allocs := math.Inf(1)
	for range 3 {
		allocs = min(allocs, testing.AllocsPerRun(100, func() {
			for range 2 * segChanges {
				q.push(change{seq: 1})
			}
			q.drop(q.len())
		}))
	}
	assert.Zero(t, allocs, "spent segments are filled again")

	q.push(change{seq: 1})
	batch = q.first(1)
	q.abandon()
	q.push(change{seq: 99})
	assert.Equal(t, []uint64{1}, seqs(batch), "an abandoned batch is left alone")
	assert.Equal(t, []uint64{99}, seqs(q.waiting()))
}

// The slab copies bytes and hands out writes without sharing room between
// changes.
func TestSlab(t *testing.T) {
	var s slab
	a := s.copyBytes([]byte{1, 2, 3})
	b := s.copyBytes([]byte{4})
	_ = append(a, 9) // a full slice: appending cannot reach b
	assert.Equal(t, []byte{4}, b)
	big := s.copyBytes(make([]byte, slabBytes+1))
	assert.Len(t, big, slabBytes+1)
	assert.Equal(t, []byte{1, 2, 3}, a)

	w := s.newWrites(2)
	w[0] = engine.CounterWrite{Level: 1}
	v := s.newWrites(1)
	_ = append(w, engine.CounterWrite{Level: 7})
	assert.Equal(t, engine.CounterWrite{}, v[0])
	assert.Len(t, s.newWrites(slabWrites+1), slabWrites+1)
	block := make([]byte, 64)
	allocs := testing.AllocsPerRun(100, func() { s.copyBytes(block) })
	assert.Less(t, allocs, 0.1, "a change's bytes come from the slab")
}
