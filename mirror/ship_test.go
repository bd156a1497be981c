package mirror

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
)

// ops splits shipScript's arguments after the header (from, to, gen, the
// claim's two and the longest wait for a hold) into operations, each its letter and operands, and the
// key indexes of the parts the script checks, which follow them.
func ops(t *testing.T, args []any) (out [][]any, checked []any) {
	t.Helper()
	checks, ok := args[len(args)-1].(int)
	require.True(t, ok, "the last argument counts the parts checked: %v", args[len(args)-1])
	end := len(args) - 1 - checks
	operands := map[string]int{"c": 2, "n": 1, "x": 1, "t": 2, "u": 1, "d": 1}
	for i := 6; i < end; {
		op, ok := args[i].(string)
		require.True(t, ok, "an operation letter at %d: %v", i, args[i])
		n, ok := operands[op]
		require.True(t, ok, "operation %q", op)
		if op == "c" {
			n += 2 * args[i+2].(int) // the part, the count, then pairs
		}
		require.LessOrEqual(t, i+1+n, end, "operation %q runs into the checks", op)
		out = append(out, args[i:i+1+n])
		i += 1 + n
	}
	return out, args[end : len(args)-1]
}

// TestShipArgsSendsTheLastOfEachSpan: a batch that writes a block again, or
// a sub-filter's tallies again, ships only the last content, in one
// operation each; a change of directory between two writes keeps both.
// Writes into one part that follow each other are one operation.
func TestShipArgsSendsTheLastOfEachSpan(t *testing.T) {
	m := &Mirror{keys: keys{"s"}, opts: (*Options)(nil).withDefaults(), owner: owner{"me", claimTTL}, gen: 3, seq: 10,
		subs: []engine.SubFilterStats{{Level: 0, Blocks: 4}}}
	block := func(level int, offset uint64, b byte) []engine.CounterWrite {
		return []engine.CounterWrite{{Level: level, Offset: offset, Bytes: []byte{b, b}}}
	}
	tallies := func(level int, count uint64) engine.Tallies {
		return engine.Tallies{Level: level, Count: count, MaxID: count, NonZero: count}
	}
	grown := []engine.SubFilterStats{{Level: 0, Blocks: 4}, {Level: 1, Blocks: 4}}

	keys, args := m.shipArgs([]change{
		{seq: 11, counters: block(0, 64, 1), hasTallies: true, tallies: tallies(0, 1)},
		{seq: 12, counters: block(0, 128, 2), hasTallies: true, tallies: tallies(0, 2)},
		{seq: 13, counters: block(0, 192, 6), hasTallies: true, tallies: tallies(0, 3)},
		{seq: 14, counters: block(0, 64, 3), hasTallies: true, tallies: tallies(0, 4)},
		{seq: 15, counters: block(1, 64, 4), hasTallies: true, tallies: tallies(1, 1), dir: grown},
		{seq: 16, counters: block(0, 64, 5), hasTallies: true, tallies: tallies(0, 5)},
		{seq: 17, counters: block(1, 128, 7), hasTallies: true, tallies: tallies(1, 2)},
		{seq: 18, counters: block(0, 128, 8), hasTallies: true, tallies: tallies(0, 6)},
	})
	assert.Equal(t, []any{uint64(10), uint64(18), uint64(3), "me", claimTTL.Milliseconds(), time.Minute.Milliseconds()}, args[:6], "from, to, generation, claim, the longest wait for a hold")
	assert.Equal(t, []string{"{s}:meta", "{s}:owner", "{s}:g3:l0:p0", "{s}:g3:l1:p0", "{s}:hold"}, keys, "each part named once, and the hold last")
	operations, checked := ops(t, args)
	assert.Equal(t, [][]any{
		{"c", 3, 1, uint64(64), []byte{3, 3}}, // the write of change 11, carrying change 14's bytes
		{"t", 0, "4 4 4"},
		{"c", 3, 2, uint64(128), []byte{2, 2}, uint64(192), []byte{6, 6}}, // changes 12 and 13, one after the other
		{"n", 4}, // change 15 opens level 1
		{"d", encodeDir(grown)},
		{"c", 4, 1, uint64(64), []byte{4, 4}},
		{"t", 1, "2 2 2"},
		{"c", 3, 1, uint64(64), []byte{5, 5}}, // after the directory changed, written again
		{"t", 0, "6 6 6"},
		{"c", 4, 1, uint64(128), []byte{7, 7}},
		{"c", 3, 1, uint64(128), []byte{8, 8}}, // another part: an operation of its own
	}, operations)
	assert.Equal(t, []any{3}, checked, "the part written without being made is checked; the one the batch makes is not")
}

// BenchmarkShipArgs builds the arguments of a batch of adds, each a block
// and its sub-filter's tallies, as shipping does; BenchmarkPatchArgs those
// of a catch-up round's scattered blocks read again.
func BenchmarkShipArgs(b *testing.B) {
	const blocks = 1 << 16
	m := &Mirror{keys: keys{"s"}, opts: (*Options)(nil).withDefaults(), owner: owner{"me", claimTTL}, gen: 3,
		subs: []engine.SubFilterStats{{Level: 0, Blocks: blocks}}}
	bytes := make([]byte, 64)
	batch := make([]change, 512)
	for i := range batch {
		batch[i] = change{seq: uint64(i + 1), counters: []engine.CounterWrite{{Offset: uint64(i*7919%blocks) * 64, Bytes: bytes}},
			hasTallies: true, tallies: engine.Tallies{Count: uint64(i)}}
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = m.shipArgs(batch)
	}
}

func BenchmarkPatchArgs(b *testing.B) {
	const blocks = 1 << 20
	m := &Mirror{keys: keys{"s"}, opts: (*Options)(nil).withDefaults(), owner: owner{"me", claimTTL}, gen: 3,
		subs: []engine.SubFilterStats{{Level: 0, Blocks: blocks}}}
	bytes := make([]byte, 256)
	writes := make([]engine.CounterWrite, holdSpans)
	for i := range writes {
		writes[i] = engine.CounterWrite{Offset: uint64(i) * 256 * 2, Bytes: bytes}
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(writes) * len(bytes)))
	for b.Loop() {
		_, _ = m.opArgs(m.keys.pending(), []any{m.gen}, []change{{counters: writes}})
	}
}
