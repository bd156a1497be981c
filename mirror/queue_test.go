package mirror

import (
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

// A queue keeps its changes in order; a batch taken from it is never
// written over by later pushes, however the array grows; an emptied array is
// used again.
func TestQueue(t *testing.T) {
	var q queue
	for s := range uint64(10) {
		q.push(change{seq: s + 1})
	}
	q.drop(2)
	batch := q.waiting()[:4]
	for s := range uint64(200) { // fills the array with room at its front
		q.push(change{seq: s + 11})
	}
	assert.Equal(t, []uint64{3, 4, 5, 6}, seqs(batch), "the batch as taken")
	q.drop(4)
	assert.Equal(t, 204, q.len())
	assert.Equal(t, uint64(7), q.waiting()[0].seq)

	for q.len() < 2000 { // a backlog that never empties
		q.drop(3)
		for range 4 {
			q.push(change{seq: q.waiting()[q.len()-1].seq + 1})
		}
	}
	assert.LessOrEqual(t, cap(q.all), 2*q.len()+64, "acknowledged room is let go")
	w := q.waiting()
	for i := 1; i < len(w); i++ {
		require.Equal(t, w[i-1].seq+1, w[i].seq, "in order")
	}

	q.drop(q.len())
	assert.Zero(t, q.len())
	room := cap(q.all)
	allocs := testing.AllocsPerRun(10, func() {
		for range room {
			q.push(change{seq: 1})
		}
		q.drop(q.len())
	})
	assert.Zero(t, allocs, "an emptied queue is filled again in place")

	q.push(change{seq: 1})
	batch = q.waiting()
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
