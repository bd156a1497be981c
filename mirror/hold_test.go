//go:build unix

package mirror

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/internal/redistest"
)

// TestReadersHoldTheCopyOfAWriterThatNeverPauses: a writer that ships a
// change before every read of its copy sends a Pull or a Restore of a copy
// read in many calls back to the start, as often as it reads. From its
// third read the reader holds the copy (keys.hold): the writer queues its
// changes instead of shipping them, and what the reader returns is the
// copy at the sequence it held, exactly. When the read ends, so does the
// hold, and the writer ships what it queued.
func TestReadersHoldTheCopyOfAWriterThatNeverPauses(t *testing.T) {
	t.Parallel()
	eachRedis(t, testReadersHoldTheCopyOfAWriterThatNeverPauses)
}

// existsScript answers whether KEYS[1] exists.
var existsScript = newScript(`return redis.call('EXISTS', KEYS[1])`)

func testReadersHoldTheCopyOfAWriterThatNeverPauses(t *testing.T, base Redis) {
	for i, reader := range wholeReaders(t, "busy") {
		t.Run(reader.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			f, m, next := shipped(t, ctx, base, "busy", engine.Config{Capacity: 400_000, ErrorRate: 0.01, Seed: 48 + uint64(i)}, smallParts, 5_000)
			require.Greater(t, parts(f.Stats().CounterBytes, smallParts.PartBytes), uint64(2*readRanges), "a copy read in several calls")

			var atHold atomic.Pointer[engine.Snapshot]
			var holds, shippedBefore, heldBack atomic.Int32
			r := callHook{base, func(s *Script, _ []string) {
				switch s {
				case holdScript:
					holds.Add(1)
					if atHold.Load() == nil {
						// Every change so far was shipped (the Flush
						// before the last read): this is Redis's copy.
						snap, err := f.Snapshot()
						assert.NoError(t, err)
						atHold.Store(snap)
					}
				case readScript:
					// A change before every read: shipped before the
					// hold, which sends the read back, and held after it.
					addKeysInHook(t, f, &next, 1)
					if holds.Load() == 0 {
						assert.NoError(t, m.Flush(ctx))
						shippedBefore.Add(1)
						return
					}
					shortly, stop := context.WithTimeout(ctx, 100*time.Millisecond)
					defer stop()
					assert.ErrorIs(t, m.Flush(shortly), context.DeadlineExceeded, "held")
					heldBack.Add(1)
				}
			}}
			remote, err := reader.read(ctx, r)
			require.NoError(t, err)
			assert.Positive(t, holds.Load(), "the reader held the copy")
			assert.GreaterOrEqual(t, shippedBefore.Load(), int32(holdAfter), "the reads before the hold were sent back by changes shipped")
			assert.Positive(t, heldBack.Load(), "the writer shipped nothing while held")
			require.NotNil(t, atHold.Load())
			requireSameSnapshot(t, atHold.Load(), remote)
			assert.Less(t, remote.MemSeq(), f.Stats().MemSeq, "changes made during the hold are not in the copy read")

			// The hold ended with the read: the queued changes ship.
			held, err := base.Eval(ctx, existsScript, true, []string{keys{"busy"}.hold()})
			require.NoError(t, err)
			assert.EqualValues(t, 0, held, "the reader ended its hold")
			require.NoError(t, m.Flush(ctx))
			requireSame(t, ctx, base, "busy", f)
		})
	}
}

// TestAHoldItsReaderLeftExpires: a reader that stops without ending its
// hold (a process killed mid-read) holds its writer back only until the
// hold expires; a switch to a new copy waits for it as shipping does, and
// the live copy stays as it was meanwhile.
func TestAHoldItsReaderLeftExpires(t *testing.T) {
	t.Parallel()
	_, base, raw, ctx := oneServer(t)
	f, m, next := shipped(t, ctx, base, "left", engine.Config{Capacity: 10_000, ErrorRate: 0.01, Seed: 51}, nil, 100)
	k := keys{"left"}
	before, err := readMeta(ctx, base, k)
	require.NoError(t, err)

	require.NoError(t, raw.Set(ctx, k.hold(), "gone.example pid 8 0123456789abcdef", 2*time.Second).Err())
	d, err := Describe(ctx, base, "left")
	require.NoError(t, err)
	assert.Equal(t, "gone.example pid 8", d.Reader, "Describe names the reader that holds the copy")
	assert.Positive(t, d.ReaderFor)
	addKeys(t, f, &next, 1)
	shortly, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	require.ErrorIs(t, m.Flush(shortly), context.DeadlineExceeded, "held: the change waits")
	require.Eventually(t, func() bool { return m.Stats().Held }, time.Second, 5*time.Millisecond, "the mirror says why it waits")
	require.NoError(t, m.Flush(ctx), "shipped once the hold expired")
	assert.False(t, m.Stats().Held)
	requireSame(t, ctx, base, "left", f)

	// A full copy's switch waits for a hold too (Push's, once the Mirror
	// gives the name up).
	require.NoError(t, m.Close())
	require.NoError(t, raw.Set(ctx, k.hold(), "another reader gone", time.Minute).Err())
	live, err := readMeta(ctx, base, k)
	require.NoError(t, err)
	require.Greater(t, live.seq, before.seq)
	// Long enough for the copy itself (milliseconds), not for the hold.
	shortly, stop = context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	require.ErrorIs(t, push(shortly, f, base, "left", nil), context.DeadlineExceeded, "the switch waits for the hold")
	still, err := readMeta(ctx, base, k)
	require.NoError(t, err)
	assert.Equal(t, live.gen, still.gen, "the live copy stays while held")
	require.NoError(t, raw.Del(ctx, k.hold()).Err())
	require.NoError(t, push(ctx, f, base, "left", nil))
	requireSame(t, ctx, base, "left", f)
}

// TestAReaderRenewsItsHold: a read of a copy that takes longer than a
// hold lasts renews the hold as it goes, so that its writer, which ships
// a change before every read the moment the hold lapses, stays held to
// the end.
func TestAReaderRenewsItsHold(t *testing.T) {
	t.Parallel()
	base := dial(t, redistest.StartServer(t).URL(), false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, m, next := shipped(t, ctx, base, "long", engine.Config{Capacity: 400_000, ErrorRate: 0.01, Seed: 52}, smallParts, 5_000)
	const ttl = time.Second
	reads, renewals := 0, 0
	r := callHook{base, func(s *Script, _ []string) {
		switch s {
		case holdScript:
			renewals++
		case readScript:
			reads++
			time.Sleep(ttl / 2)
			addKeys(t, f, &next, 1)
			shortly, stop := context.WithTimeout(ctx, 50*time.Millisecond)
			defer stop()
			assert.ErrorIs(t, m.Flush(shortly), context.DeadlineExceeded, "read %d: the writer is held", reads)
		}
	}}
	at, err := f.Snapshot()
	require.NoError(t, err)
	rd := &reader{r: r, k: keys{"long"}, token: "a reader", ttl: ttl, wants: true}
	defer rd.unhold()
	remote, err := rd.pull(ctx)
	require.NoError(t, err)
	require.Greater(t, time.Duration(reads)*ttl/2, ttl, "the read outlasted a hold")
	assert.Greater(t, renewals, 1, "the hold was renewed")
	requireSameSnapshot(t, at, remote)
}

// TestAReadWithoutAHold: a Redis that will not take a hold, a replica or
// a user whose ACL lets it only read, is read without one, as before
// there were holds, not refused: a whole read of a writer that pauses
// succeeds there.
func TestAReadWithoutAHold(t *testing.T) {
	t.Parallel()
	s, base, raw, ctx := oneServer(t)
	f, _, _ := shipped(t, ctx, base, "ro", engine.Config{Capacity: 400_000, ErrorRate: 0.01, Seed: 53}, smallParts, 5_000)
	require.NoError(t, raw.Do(ctx, "ACL", "SETUSER", "reader", "on", ">secret", "~*", "+@read", "+@scripting", "-@write").Err())
	require.NoError(t, raw.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err()) // a replica syncs at once
	replica := redistest.StartServer(t, "--replicaof", "127.0.0.1", s.Addr()[len("127.0.0.1:"):])
	replicated := redistest.Client(t, replica)
	require.Eventually(t, func() bool {
		return replicated.HGet(ctx, keys{"ro"}.meta(), "seq").Val() == raw.HGet(ctx, keys{"ro"}.meta(), "seq").Val()
	}, 10*time.Second, 10*time.Millisecond, "the replica has the copy")

	for name, r := range map[string]Redis{
		"read-only user": dial(t, "redis://reader:secret@"+s.Addr(), false),
		"replica":        dial(t, replica.URL(), false),
	} {
		t.Run(name, func(t *testing.T) {
			rd := &reader{r: r, k: keys{"ro"}, token: "a reader", ttl: time.Second, wants: true}
			meta, err := readMeta(ctx, r, rd.k)
			require.NoError(t, err)
			got, err := rd.hold(ctx, meta)
			require.NoError(t, err, "no hold, and no failure")
			assert.Zero(t, rd.held)
			assert.False(t, rd.wants, "not asked again")
			assert.Equal(t, meta, got)
			assert.Zero(t, raw.Exists(ctx, rd.k.hold()).Val())

			remote, err := rd.pull(ctx)
			require.NoError(t, err)
			local, err := f.Snapshot()
			require.NoError(t, err)
			requireSameSnapshot(t, local, remote)
		})
	}
}

// TestAHeldWriterAsksWithoutItsBatch: while a reader holds the copy, the
// writer asks whether the hold is gone with a call that carries nothing,
// and sends its batch again only once it is.
func TestAHeldWriterAsksWithoutItsBatch(t *testing.T) {
	t.Parallel()
	_, base, raw, ctx := oneServer(t)
	var ships, asks atomic.Int32
	counted := callHook{base, func(s *Script, _ []string) {
		switch s {
		case shipScript:
			ships.Add(1)
		case holdTTLScript:
			asks.Add(1)
		}
	}}
	f, m, next := shipped(t, ctx, counted, "asks", engine.Config{Capacity: 10_000, ErrorRate: 0.01, Seed: 54}, nil, 100)
	require.NoError(t, raw.Set(ctx, keys{"asks"}.hold(), "a reader", 600*time.Millisecond).Err())
	ships.Store(0)
	addKeys(t, f, &next, 10)
	require.NoError(t, m.Flush(ctx))
	assert.Equal(t, int32(2), ships.Load(), "the batch, once held and once shipped")
	assert.Positive(t, asks.Load(), "asked whether the hold was gone")
	requireSame(t, ctx, base, "asks", f)
}

// TestAWriterCutsAHoldAtMaxHold: a reader whose whole read outlasts its
// writer's Options.MaxHold holds the writer back that long and no longer.
// Then the writer cuts the hold and ships; the read fails with
// ErrCopyChanging at once, not after reading again and again; and for
// MaxHold after the cut, and as long as the hold would have lasted, no
// reader holds the copy, where one that came would hold the writer back
// for as long again.
func TestAWriterCutsAHoldAtMaxHold(t *testing.T) {
	t.Parallel()
	eachRedis(t, testAWriterCutsAHoldAtMaxHold)
}

func testAWriterCutsAHoldAtMaxHold(t *testing.T, base Redis) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const maxHold = 600 * time.Millisecond
	opts := &Options{PartBytes: 4096, Backoff: 10 * time.Millisecond, MaxHold: maxHold}
	f, m, next := shipped(t, ctx, base, "cut", engine.Config{Capacity: 400_000, ErrorRate: 0.01, Seed: 55}, opts, 5_000)
	k := keys{"cut"}
	var heldAt atomic.Pointer[time.Time]
	var shippedAfter atomic.Int64 // ns from the hold to the first change Redis took under it
	r := callHook{base, func(s *Script, _ []string) {
		switch s {
		case holdScript:
			now := time.Now()
			heldAt.CompareAndSwap(nil, &now)
		case readScript:
			// A change before every read, which the read waits to see
			// in Redis: at once before the hold, and under it only once
			// the writer cuts it (3 s at most).
			addKeysInHook(t, f, &next, 1)
			for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if meta, err := readMeta(ctx, base, k); err == nil && meta.seq == f.Stats().MemSeq {
					if at := heldAt.Load(); at != nil {
						shippedAfter.CompareAndSwap(0, int64(time.Since(*at)))
					}
					return
				}
			}
		}
	}}
	_, err := Pull(ctx, r, "cut")
	require.ErrorIs(t, err, ErrCopyChanging)
	require.ErrorIs(t, err, errHoldCut, "the read ends when its hold is cut: %v", err)
	assert.ErrorContains(t, err, "Options.MaxHold")
	require.NotNil(t, heldAt.Load(), "the reader held the copy")
	require.Positive(t, shippedAfter.Load(), "the writer shipped during the read")
	// Redis's clock and this one's are the same machine's; the writer
	// asks about a hold every 100 ms at most.
	assert.GreaterOrEqual(t, time.Duration(shippedAfter.Load()), maxHold-20*time.Millisecond, "the writer waited for the hold")
	assert.Equal(t, uint64(1), m.Stats().HoldsCut)
	assert.False(t, m.Stats().Held)

	// The writer ships while the cut lasts, and no reader holds it.
	addKeys(t, f, &next, 10)
	shortly, stop := context.WithTimeout(ctx, maxHold/2)
	defer stop()
	require.NoError(t, m.Flush(shortly), "shipped, not held")
	requireSame(t, ctx, base, "cut", f)
	d, err := Describe(ctx, base, "cut")
	require.NoError(t, err)
	assert.True(t, d.HoldCut, "Describe says the hold was cut")
	assert.Equal(t, thisProcess(), d.Reader, "and whose it was")
	assert.GreaterOrEqual(t, d.ReaderHeld, maxHold, "and how long ago it began")
	meta, err := readMeta(ctx, base, k)
	require.NoError(t, err)
	late := &reader{r: base, k: k, token: "a late reader", ttl: holdFor, wants: true}
	_, err = late.hold(ctx, meta)
	require.NoError(t, err)
	assert.Zero(t, late.held, "no hold while the cut lasts")
	assert.True(t, late.cutFound)

	// Once the cut has lasted MaxHold, and as long as the hold it cut
	// would have, a reader holds the copy again.
	require.Eventually(t, func() bool {
		rd := &reader{r: base, k: k, token: "a later reader", ttl: holdFor, wants: true}
		_, err := rd.hold(ctx, meta)
		defer rd.unhold()
		return err == nil && rd.held == meta.gen
	}, holdFor+maxHold, 20*time.Millisecond, "the cut expires")
}

// TestASwitchCutsAHoldAtMaxHold: a full copy's switch waits for a
// reader's hold as shipping does, and for as long: a hold that began
// MaxHold ago is cut at once, a new one once it is that old.
func TestASwitchCutsAHoldAtMaxHold(t *testing.T) {
	t.Parallel()
	_, base, raw, ctx := oneServer(t)
	f := newFilter(t, engine.Config{Capacity: 10_000, ErrorRate: 0.01, Seed: 56})
	next := uint64(1)
	addKeys(t, f, &next, 100)
	const maxHold = 500 * time.Millisecond
	opts := &Options{MaxHold: maxHold}
	require.NoError(t, push(ctx, f, base, "switch", opts))
	k := keys{"switch"}
	redisNow := func() time.Time {
		now, err := raw.Time(ctx).Result()
		require.NoError(t, err)
		return now
	}
	setHold := func(since time.Time) {
		require.NoError(t, raw.Set(ctx, k.hold(), strconv.FormatInt(since.UnixMilli(), 10)+" host pid 9 0123456789abcdef", time.Minute).Err())
	}

	setHold(redisNow().Add(-time.Hour))
	addKeys(t, f, &next, 10)
	shortly, stop := context.WithTimeout(ctx, maxHold/2)
	defer stop()
	require.NoError(t, push(shortly, f, base, "switch", opts), "a hold older than MaxHold is cut at once")
	requireSame(t, ctx, base, "switch", f)
	assert.True(t, strings.HasPrefix(raw.Get(ctx, k.hold()).Val(), "!"), "cut")

	setHold(redisNow())
	addKeys(t, f, &next, 10)
	start := time.Now()
	require.NoError(t, push(ctx, f, base, "switch", opts))
	assert.GreaterOrEqual(t, time.Since(start), maxHold-20*time.Millisecond, "the switch waited for the hold")
	requireSame(t, ctx, base, "switch", f)
	assert.True(t, strings.HasPrefix(raw.Get(ctx, k.hold()).Val(), "!"), "cut")
}

// TestDescribeTellsAHoldsAge: Describe names the reader of a hold, how
// long it has held the copy by Redis's clock, and whether its writer cut
// it; a hold that does not say when it began (set by hand, or by an older
// reader) has no age.
func TestDescribeTellsAHoldsAge(t *testing.T) {
	t.Parallel()
	_, base, raw, ctx := oneServer(t)
	shipped(t, ctx, base, "age", engine.Config{Capacity: 1000, ErrorRate: 0.01, Seed: 57}, nil, 10)
	now, err := raw.Time(ctx).Result()
	require.NoError(t, err)
	began := strconv.FormatInt(now.Add(-3*time.Second).UnixMilli(), 10)
	for _, c := range []struct {
		value string
		held  time.Duration
		cut   bool
	}{
		{began + " host.example pid 9 0123456789abcdef", 3 * time.Second, false},
		{"!" + began + " host.example pid 9 0123456789abcdef", 3 * time.Second, true},
		{"host.example pid 9 0123456789abcdef", 0, false},
	} {
		require.NoError(t, raw.Set(ctx, keys{"age"}.hold(), c.value, time.Minute).Err())
		d, err := Describe(ctx, base, "age")
		require.NoError(t, err)
		assert.Equal(t, "host.example pid 9", d.Reader, c.value)
		assert.Equal(t, c.cut, d.HoldCut, c.value)
		assert.GreaterOrEqual(t, d.ReaderHeld, c.held, c.value)
		assert.Less(t, d.ReaderHeld, c.held+time.Second, c.value)
		assert.Greater(t, d.ReaderFor, 50*time.Second, c.value)
	}
}

// TestABatchCutsAnOldHold: a batch that finds a hold already as old as
// MaxHold (its writer had nothing to ship while it lasted) cuts it and
// goes again at once, and the mirror counts the cut.
func TestABatchCutsAnOldHold(t *testing.T) {
	t.Parallel()
	_, base, raw, ctx := oneServer(t)
	const maxHold = time.Minute
	f, m, next := shipped(t, ctx, base, "old", engine.Config{Capacity: 1000, ErrorRate: 0.01, Seed: 58}, &Options{MaxHold: maxHold}, 10)
	now, err := raw.Time(ctx).Result()
	require.NoError(t, err)
	hold := strconv.FormatInt(now.Add(-maxHold).UnixMilli(), 10) + " host.example pid 9 0123456789abcdef"
	require.NoError(t, raw.Set(ctx, keys{"old"}.hold(), hold, 5*time.Second).Err())
	addKeys(t, f, &next, 1)
	shortly, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	require.NoError(t, m.Flush(shortly), "shipped past the hold")
	requireSame(t, ctx, base, "old", f)
	assert.Equal(t, uint64(1), m.Stats().HoldsCut)
	assert.Equal(t, "!"+hold, raw.Get(ctx, keys{"old"}.hold()).Val(), "cut")
	assert.Greater(t, raw.PTTL(ctx, keys{"old"}.hold()).Val(), 50*time.Second, "for MaxHold")
}

// oneServer starts a Redis server for a test of holds and dials it as the
// mirror does (base) and as a plain client (raw), which sets and reads the
// hold by hand; ctx ends with the test, or after 30 s.
func oneServer(t *testing.T) (s *redistest.Server, base Redis, raw *redis.Client, ctx context.Context) {
	t.Helper()
	s = redistest.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return s, dial(t, s.URL(), false), redistest.Client(t, s), ctx
}
