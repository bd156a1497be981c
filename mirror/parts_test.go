//go:build unix

package mirror

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/internal/redistest"
)

// TestNewSubFilterIsNotZeroedInRedis: the batch that opens a sub-filter
// makes its parts one zero byte long, and the writer then fills them to
// their length one call a part. Zeroing a new sub-filter's whole room in
// the script that ships the change held Redis for seconds when the
// sub-filter was gigabytes; now a call holds it for one part's zeroing.
// Once filled, the copy is the file's bytes, and checks find every key.
func TestNewSubFilterIsNotZeroedInRedis(t *testing.T) {
	s := redistest.StartServer(t)
	raw := redistest.Client(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var fills atomic.Int32
	heldAtFirstFill := int64(-1)
	r := callHook{dial(t, s.URL(), false), func(sc *Script, _ []string) {
		if sc == fillScript && fills.Add(1) == 1 {
			heldAtFirstFill = 0
			inHook(t, func(t testingT) {
				for _, name := range keysLike(t, raw, "{lazy}:g*:l1:p*") {
					heldAtFirstFill += raw.StrLen(ctx, name).Val()
				}
			})
		}
	}}
	f, m, next := fullFirstSubFilter(t, ctx, r, "lazy", 31)
	require.Zero(t, fills.Load(), "a full copy writes its parts whole")
	addKeys(t, f, &next, 3) // the first opens level 1
	require.NoError(t, m.Flush(ctx))

	subs := f.Stats().SubFilters
	require.Len(t, subs, 2)
	size := subs[1].Bytes
	n := parts(size, smallParts.PartBytes)
	require.Greater(t, n, uint64(8), "a sub-filter of many parts")
	// Three adds write at most three parts, each up to its end.
	assert.LessOrEqual(t, heldAtFirstFill, int64(3*smallParts.PartBytes+n), "bytes of a sub-filter of %d the batch that opened it wrote", size)
	assert.Equal(t, int32(n), fills.Load(), "one call a part")
	d, err := Describe(ctx, r, "lazy")
	require.NoError(t, err)
	for p := range n {
		assert.Equal(t, int64(min(smallParts.PartBytes, size-p*smallParts.PartBytes)), raw.StrLen(ctx, keys{"lazy"}.part(d.Generation, 1, p)).Val(), "part %d filled", p)
	}

	requireSame(t, ctx, r, "lazy", f)
	c, err := NewChecker(ctx, r, "lazy")
	require.NoError(t, err)
	present, err := c.ContainsBatch(ctx, keysTo(next), nil)
	require.NoError(t, err)
	assert.NotContains(t, present, false)
}

// TestPartLostBeforeItsFillStaysLost: a part the batch that opened a
// sub-filter made and wrote into, gone from Redis before the writer fills
// it (evicted in between). The fill passes it by rather than make it
// again as zeros, which would drop the batch's bytes and have checks find
// the keys it held absent: checks say the part is lost (ErrPartLost).
func TestPartLostBeforeItsFillStaysLost(t *testing.T) {
	s := redistest.StartServer(t)
	raw := redistest.Client(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var lost string
	r := callHook{dial(t, s.URL(), false), func(sc *Script, _ []string) {
		if sc != fillScript || lost != "" {
			return
		}
		inHook(t, func(t testingT) { // on the shipper's goroutine
			for _, name := range keysLike(t, raw, "{unfilled}:g*:l1:p*") {
				if raw.StrLen(ctx, name).Val() > 1 { // written, not only made
					lost = name
					assert.NoError(t, raw.Del(ctx, name).Err())
					return
				}
			}
		})
	}}
	f, m, next := fullFirstSubFilter(t, ctx, r, "unfilled", 34)
	// One add opens level 1 and writes one part of it: no later batch
	// writes into the lost part, which would have the copy made again.
	addKeys(t, f, &next, 1)
	require.NoError(t, m.Flush(ctx))
	require.NotEmpty(t, lost, "a part the batch wrote was deleted before its fill")
	assert.Zero(t, raw.Exists(ctx, lost).Val(), "the fill did not make it again")

	c, err := NewChecker(ctx, r, "unfilled")
	require.NoError(t, err)
	present, err := c.ContainsBatch(ctx, keysTo(next), nil)
	assert.ErrorIs(t, err, ErrPartLost)
	assert.NotContains(t, present, false, "no key reads as absent")
}

// fullFirstSubFilter is a filter whose first sub-filter holds its 1000
// keys, and whose next, for keys with newer ids, takes eight times as many,
// mirrored into r as name and flushed: the next add opens level 1.
func fullFirstSubFilter(t *testing.T, ctx context.Context, r Redis, name string, seed uint64) (*engine.Filter, *Mirror, uint64) {
	t.Helper()
	f := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Growth: 8, Seed: seed})
	m, err := Attach(f, r, name, smallParts)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	next := uint64(0)
	addKeys(t, f, &next, 1000)
	require.NoError(t, m.Flush(ctx))
	return f, m, next
}

// keysTo is key(i) for every i below n.
func keysTo(n uint64) [][]byte {
	out := make([][]byte, 0, n)
	for i := range n {
		out = append(out, key(i))
	}
	return out
}

// TestLostPartIsCopiedAgain: a part of the live copy gone from Redis, as a
// Redis that evicts keys without an expiry leaves it. Checks say so
// (ErrPartLost) instead of reading zeros. The writer's next change into
// the part is refused whole, rather than bring the part back as zeros and
// that change's bytes, and the mirror writes a full copy, after which
// Redis holds the file's bytes again.
func TestLostPartIsCopiedAgain(t *testing.T) {
	s := redistest.StartServer(t)
	r := dial(t, s.URL(), false)
	raw := redistest.Client(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := newFilter(t, engine.Config{Capacity: 2000, ErrorRate: 0.01, Fixed: true, Seed: 32})
	m, err := Attach(f, r, "evicted", smallParts)
	require.NoError(t, err)
	defer m.Close()
	next := uint64(0)
	addKeys(t, f, &next, 1000)
	require.NoError(t, m.Flush(ctx))
	require.Greater(t, parts(f.Stats().SubFilters[0].Bytes, smallParts.PartBytes), uint64(1))
	d, err := Describe(ctx, r, "evicted")
	require.NoError(t, err)
	require.NoError(t, raw.Del(ctx, keys{"evicted"}.part(d.Generation, 0, 0)).Err())

	c, err := NewChecker(ctx, r, "evicted")
	require.NoError(t, err)
	_, err = c.ContainsBatch(ctx, keysTo(next), nil)
	assert.ErrorIs(t, err, ErrPartLost)

	recopies := m.Stats().Recopies
	addKeys(t, f, &next, 100) // some into the lost part
	require.NoError(t, m.Flush(ctx))
	assert.Equal(t, recopies+1, m.Stats().Recopies)
	assert.Contains(t, m.Stats().RecopyReason, "lost a part")
	requireSame(t, ctx, r, "evicted", f)
	present, err := c.ContainsBatch(ctx, keysTo(next), nil)
	require.NoError(t, err)
	assert.NotContains(t, present, false)
}

// TestRestoreWaitsForAPartBeingFilled: Restore and Pull read a copy again
// when a part is shorter than the copy says, as a part a batch just made
// is until its writer fills it. One that stays short is refused
// (ErrBadAnswer), leaving no file, rather than read as zeros Redis does
// not hold: a copy cannot make them take more room than it holds.
func TestRestoreWaitsForAPartBeingFilled(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	raw := redistest.Client(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Fixed: true, Seed: 33})
	next := uint64(0)
	addKeys(t, f, &next, 500)
	plain := dial(t, s.URL(), false)
	require.NoError(t, push(ctx, f, plain, "short", smallParts))
	d, err := Describe(ctx, plain, "short")
	require.NoError(t, err)
	name := keys{"short"}.part(d.Generation, 0, 1)
	whole := raw.Get(ctx, name).Val()
	require.Greater(t, len(whole), 1)

	require.NoError(t, raw.Set(ctx, name, whole[:1], 0).Err())
	var reads atomic.Int32
	r := callHook{plain, func(sc *Script, _ []string) {
		if sc == readScript && reads.Add(1) == 2 {
			assert.NoError(t, raw.Set(ctx, name, whole, 0).Err()) // filled as Restore reads again
		}
	}}
	path := filepath.Join(t.TempDir(), "restored.tb")
	g, err := Restore(ctx, r, "short", path, nil)
	require.NoError(t, err)
	want, err := f.Snapshot()
	require.NoError(t, err)
	got, err := g.Snapshot()
	require.NoError(t, err)
	require.NoError(t, g.Close())
	assert.Equal(t, want.Counters(0), got.Counters(0))

	require.NoError(t, raw.Set(ctx, name, whole[:1], 0).Err())
	path = filepath.Join(t.TempDir(), "never.tb")
	_, err = Restore(ctx, plain, "short", path, nil)
	assert.ErrorIs(t, err, ErrBadAnswer)
	assert.NoFileExists(t, path)
	_, err = Pull(ctx, plain, "short")
	assert.ErrorIs(t, err, ErrBadAnswer)
}

// TestPartsThatEndWhereTheirSubFilterEnds: with parts of one block, every
// sub-filter's counters end exactly where a part ends. A sub-filter opened
// while the mirror is attached takes one part a block, each a block long,
// and none past its end; one retired leaves none behind.
func TestPartsThatEndWhereTheirSubFilterEnds(t *testing.T) {
	s := redistest.StartServer(t)
	raw := redistest.Client(t, s)
	r := dial(t, s.URL(), false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := newFilter(t, engine.Config{Capacity: 300, ErrorRate: 0.01, Growth: 1, Seed: 32})
	m, err := Attach(f, r, "exact", &Options{PartBytes: 64})
	require.NoError(t, err)
	defer m.Close()
	next := uint64(0)
	addKeys(t, f, &next, 301) // the last opens level 1
	require.NoError(t, m.Flush(ctx))

	subs := f.Stats().SubFilters
	require.Len(t, subs, 2)
	d, err := Describe(ctx, r, "exact")
	require.NoError(t, err)
	partsOf := func(level int) []string {
		return keysLike(t, raw, fmt.Sprintf("{exact}:g%d:l%d:p*", d.Generation, level))
	}
	for _, sub := range subs {
		names := partsOf(sub.Level)
		assert.Len(t, names, int(sub.Blocks), "level %d: one part a block", sub.Level)
		for _, name := range names {
			assert.Equal(t, int64(64), raw.StrLen(ctx, name).Val(), name)
		}
	}
	requireSame(t, ctx, r, "exact", f)

	// Retired, a sub-filter's parts go, every one of them.
	dropOldest(t, f)
	require.NoError(t, m.Flush(ctx))
	assert.Empty(t, partsOf(subs[0].Level), "parts of the retired sub-filter")
	assert.Len(t, partsOf(subs[1].Level), int(subs[1].Blocks))
	requireSame(t, ctx, r, "exact", f)
}

// TestPartsThatDoNotDivideARead: parts of 64 000 bytes, a multiple of 64
// that does not divide the 8 MiB a read asks for at most, so that reads of
// a sub-filter larger than that begin in the middle of a part and end in
// the middle of another. Pulled and restored, the copy is whole. So is a
// copy written in pieces of a chunk into one part longer than a chunk.
func TestPartsThatDoNotDivideARead(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	r := dial(t, s.URL(), false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := newFilter(t, engine.Config{Capacity: 2_000_000, ErrorRate: 0.01, Seed: 34})
	counters := f.Stats().SubFilters[0].Blocks * 64
	const part = 64_000
	require.Greater(t, counters, uint64(chunkBytes), "reads of more than one chunk")
	require.NotZero(t, chunkBytes%part, "a read that ends inside a part")
	next := uint64(0)
	addKeys(t, f, &next, 20_000)
	require.NoError(t, push(ctx, f, r, "uneven", &Options{PartBytes: part}))

	requireSame(t, ctx, r, "uneven", f)
	g, err := Restore(ctx, r, "uneven", filepath.Join(t.TempDir(), "uneven.tb"), nil)
	require.NoError(t, err)
	defer g.Close()
	requireSameFilters(t, f, g)

	// With the default parts, the one part is written in pieces of a
	// chunk, the last shorter.
	require.Less(t, counters, uint64(32<<20), "one part")
	require.NotZero(t, counters%chunkBytes, "a last piece shorter than a chunk")
	require.NoError(t, push(ctx, f, r, "one-part", nil))
	requireSame(t, ctx, r, "one-part", f)
	d, err := Describe(ctx, r, "one-part")
	require.NoError(t, err)
	onePart := keys{"one-part"}.part(d.Generation, 0, 0)
	assert.Equal(t, int64(counters), redistest.Client(t, s).StrLen(ctx, onePart).Val(), "the part's length")
}
