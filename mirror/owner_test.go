//go:build unix

package mirror

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/internal/redistest"
)

// testClaimTTL is the claim of the tests that watch a holder renew it for
// several times its length. A holder renews it every third of it, so a
// renewal held up for two thirds of it (by a busy machine, the race
// detector and a cluster) lets it lapse: 300 ms did, in a run with a
// process spinning beside the tests.
const testClaimTTL = time.Second

// TestSecondWriterOfANameWaits: a mirror attached under a name another
// mirror holds does not replace that one's copy, and says why, for as long
// as the holder renews its claim, idle or not; Push is refused meanwhile.
// When the holder closes, the name is free at once and the second takes
// it over.
func TestSecondWriterOfANameWaits(t *testing.T) {
	t.Parallel()
	eachRedisRaw(t, testSecondWriterOfANameWaits)
}

func testSecondWriterOfANameWaits(t *testing.T, r Redis, raw redis.UniversalClient) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name = "shared"
	first, _ := filledFilter(t, 2000, 41, 1000)
	second, _ := filledFilter(t, 2000, 42, 1500)
	short := &Options{PartBytes: 4096, Backoff: 10 * time.Millisecond, ClaimTTL: testClaimTTL}
	holder, err := Attach(first, r, name, short)
	require.NoError(t, err)
	defer holder.Close()
	require.NoError(t, holder.Flush(ctx))

	waiter, err := Attach(second, r, name, short)
	require.NoError(t, err)
	defer waiter.Close()
	// Several times the claim's time, all of it idle for the holder.
	waited, stop := context.WithTimeout(ctx, 3*testClaimTTL)
	defer stop()
	err = waiter.Flush(waited)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, ErrNameTaken, "Flush says why Redis is behind")
	assert.Contains(t, waiter.Stats().LastError, ErrNameTaken.Error())
	assert.Contains(t, waiter.Stats().LastError, "this process ("+holderOf(holder.owner.token)+") holds it")
	assert.Zero(t, waiter.Stats().Recopies)
	assert.Equal(t, uint64(1), holder.Stats().Recopies, "the holder's copy was never replaced")
	requireSame(t, ctx, r, name, first)

	_, err = Push(ctx, second, r, name, short)
	assert.ErrorIs(t, err, ErrNameTaken)
	requireSame(t, ctx, r, name, first)

	require.NoError(t, holder.Close())
	assert.Zero(t, raw.Exists(ctx, keys{name}.owner()).Val(), "Close gives the name up")
	require.NoError(t, waiter.Flush(ctx))
	requireSame(t, ctx, r, name, second)
}

// TestClaimOfADeadWriterExpires: a writer that stopped without Close (its
// process killed) holds its name until its claim expires; then a mirror
// takes the name over, having said meanwhile who held it.
func TestClaimOfADeadWriterExpires(t *testing.T) {
	t.Parallel()
	eachRedisRaw(t, testClaimOfADeadWriterExpires)
}

func testClaimOfADeadWriterExpires(t *testing.T, r Redis, raw redis.UniversalClient) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name = "orphan"
	f, _ := filledFilter(t, 2000, 43, 1000)
	// The dead writer's copy, written but not yet live when it died.
	assert.Error(t, push(ctx, f, failingSwitch{r}, name, smallParts))
	dead := "gone.example pid 4242 00000000deadbeef"
	require.NoError(t, raw.Set(ctx, keys{name}.owner(), dead, 700*time.Millisecond).Err())

	_, err := Push(ctx, f, r, name, smallParts)
	assert.ErrorIs(t, err, ErrNameTaken)
	assert.ErrorContains(t, err, "gone.example pid 4242 holds it")
	assert.Equal(t, int64(1), raw.Exists(ctx, keys{name}.pending()).Val(), "a copy refused leaves the holder's pending copy alone")

	m, err := Attach(f, r, name, &Options{PartBytes: 4096, Backoff: 10 * time.Millisecond})
	require.NoError(t, err)
	defer m.Close()
	require.Eventually(t, func() bool {
		return m.Stats().LastError != "" && m.Stats().Recopies == 0
	}, 5*time.Second, 5*time.Millisecond, "the mirror waits for the name")
	assert.Contains(t, m.Stats().LastError, "gone.example pid 4242 holds it")
	require.NoError(t, m.Flush(ctx))
	requireSame(t, ctx, r, name, f)
	assert.Equal(t, m.owner.token, raw.Get(ctx, keys{name}.owner()).Val())
	assert.Equal(t, attachedKeys(f, name, 2, 4096), keysLike(t, raw, "{"+name+"}*"), "the dead writer's copy deleted")
}

// TestNameTakenWhileAway: a mirror whose claim expired while it could not
// reach Redis, and which another writer took, stops shipping into that
// writer's copy and waits.
func TestNameTakenWhileAway(t *testing.T) {
	t.Parallel()
	eachRedisRaw(t, testNameTakenWhileAway)
}

func testNameTakenWhileAway(t *testing.T, r Redis, raw redis.UniversalClient) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name = "lapsed"
	f, next := filledFilter(t, 2000, 44, 1000)
	m, err := Attach(f, r, name, &Options{PartBytes: 4096, Backoff: 10 * time.Millisecond})
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Flush(ctx))
	other := "elsewhere.example pid 7 0123456789abcdef"
	require.NoError(t, raw.Set(ctx, keys{name}.owner(), other, time.Minute).Err())
	before, err := readMeta(ctx, r, keys{name})
	require.NoError(t, err)

	addKeys(t, f, &next, 10)
	require.Eventually(t, func() bool { return m.Stats().LastError != "" }, 5*time.Second, 5*time.Millisecond)
	assert.Contains(t, m.Stats().LastError, "elsewhere.example pid 7 holds it")
	after, err := readMeta(ctx, r, keys{name})
	require.NoError(t, err)
	assert.Equal(t, before.seq, after.seq, "nothing shipped into the copy of a name another holds")
	assert.Equal(t, before.gen, after.gen)

	require.NoError(t, raw.Del(ctx, keys{name}.owner()).Err()) // the other gives up
	require.NoError(t, m.Flush(ctx))
	requireSame(t, ctx, r, name, f)
}

// TestDescribe: Describe says what Redis holds under a name: the live copy
// as the file has it, the writer holding the name, and a copy pending.
func TestDescribe(t *testing.T) {
	t.Parallel()
	eachRedisRaw(t, testDescribe)
}

func testDescribe(t *testing.T, r Redis, raw redis.UniversalClient) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Describe(ctx, r, "nothing")
	assert.ErrorIs(t, err, ErrNotMirrored)
	_, err = Describe(ctx, r, "{bad}")
	assert.ErrorIs(t, err, ErrInvalidName)

	f, _ := filledFilter(t, 2000, 45, 5000) // several sub-filters
	m, err := Attach(f, r, "described", smallParts)
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Flush(ctx))
	d, err := Describe(ctx, r, "described")
	require.NoError(t, err)
	st := f.Stats()
	require.Greater(t, len(st.SubFilters), 1)
	assert.True(t, d.Live)
	assert.Equal(t, st.MemSeq, d.Seq)
	assert.Equal(t, f.Config(), d.Config)
	assert.Equal(t, smallParts.PartBytes, d.PartBytes)
	require.Len(t, d.SubFilters, len(st.SubFilters))
	for i, sub := range st.SubFilters {
		got := d.SubFilters[i]
		assert.Equal(t, [6]uint64{uint64(sub.Level), sub.FirstID, sub.MaxID, sub.Capacity, sub.Count, sub.NonZero},
			[6]uint64{uint64(got.Level), got.FirstID, got.MaxID, got.Capacity, got.Count, got.NonZero})
		assert.Equal(t, sub.Bytes, got.Bytes)
	}
	assert.Equal(t, holderOf(m.owner.token), d.Writer)
	assert.Positive(t, d.WriterFor)
	assert.LessOrEqual(t, d.WriterFor, claimTTL)
	assert.Zero(t, d.Pending)
	live, err := readMeta(ctx, r, keys{"described"})
	require.NoError(t, err)
	assert.Equal(t, live.gen, d.Generation)
	// The memory of the server that holds the copy (on a cluster, its
	// slot's node), as INFO gives it.
	require.NotNil(t, d.Memory)
	assert.Positive(t, d.Memory.Used)
	assert.Zero(t, d.Memory.Max, "no maxmemory")
	assert.Equal(t, "noeviction", d.Memory.Policy)
	assert.False(t, d.Memory.Evicts())

	// A first copy never made live: no copy, no writer, one pending.
	assert.Error(t, push(ctx, f, failingSwitch{r}, "half", smallParts))
	d, err = Describe(ctx, r, "half")
	require.NoError(t, err)
	assert.False(t, d.Live)
	assert.Empty(t, d.Writer)
	assert.Positive(t, d.Pending)

	require.NoError(t, raw.Set(ctx, keys{"foreign"}.pending(), "a string", 0).Err())
	_, err = Describe(ctx, r, "foreign")
	assert.ErrorIs(t, err, ErrBadAnswer)
}

// TestPusherHoldsTheNameBetweenPushes: a Pusher keeps its claim while it
// waits between pushes, so another writer is refused all that time, and
// gives it up at Close.
func TestPusherHoldsTheNameBetweenPushes(t *testing.T) {
	t.Parallel()
	eachRedisRaw(t, testPusherHoldsTheNameBetweenPushes)
}

func testPusherHoldsTheNameBetweenPushes(t *testing.T, r Redis, raw redis.UniversalClient) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name = "pushed"
	mine, _ := filledFilter(t, 2000, 46, 1000)
	other, _ := filledFilter(t, 2000, 47, 1500)
	p, err := NewPusher(r, name, &Options{PartBytes: 4096, Backoff: 10 * time.Millisecond, ClaimTTL: testClaimTTL})
	require.NoError(t, err)
	defer p.Close()
	_, err = p.Push(ctx, mine)
	require.NoError(t, err)

	// Between pushes, for several times the claim's time, the name stays
	// claimed: the pusher renews it well before it expires.
	for end := time.Now().Add(3 * testClaimTTL); time.Now().Before(end); time.Sleep(25 * time.Millisecond) {
		require.EqualValues(t, 1, raw.Exists(ctx, keys{name}.owner()).Val(), "the claim lapsed between pushes")
	}
	_, err = Push(ctx, other, r, name, smallParts)
	assert.ErrorIs(t, err, ErrNameTaken)
	seq, err := p.Push(ctx, mine)
	require.NoError(t, err)
	assert.Equal(t, mine.Stats().MemSeq, seq)
	requireSame(t, ctx, r, name, mine)
	held, err := p.Holds(ctx, seq)
	require.NoError(t, err)
	assert.True(t, held, "Redis holds the last copy at its sequence")
	held, _ = p.Holds(ctx, seq+1)
	assert.False(t, held, "a filter changed since")

	require.NoError(t, p.Close())
	assert.Zero(t, raw.Exists(ctx, keys{name}.owner()).Val(), "Close gives the name up")
	_, err = p.Push(ctx, mine)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = Push(ctx, other, r, name, smallParts)
	require.NoError(t, err)
	requireSame(t, ctx, r, name, other)
	for _, at := range []uint64{seq, other.Stats().MemSeq} {
		held, _ = p.Holds(ctx, at)
		assert.False(t, held, "another writer's copy, at %d", at)
	}
	require.NoError(t, raw.Del(ctx, keys{name}.meta()).Err())
	held, err = p.Holds(ctx, seq)
	assert.NoError(t, err)
	assert.False(t, held, "Redis lost the copy")
}

// Describe gives the Redis server's maxmemory and its policy, and does
// without them where Redis does not let a script ask (INFO renamed away).
func TestDescribeSaysRedisMemory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Seed: 2})
	for _, c := range []struct {
		args   []string
		memory *Memory
	}{
		{[]string{"--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"}, &Memory{Max: 64 << 20, Policy: "allkeys-lru"}},
		{[]string{"--maxmemory", "32mb", "--maxmemory-policy", "volatile-lru"}, &Memory{Max: 32 << 20, Policy: "volatile-lru"}},
		{[]string{"--rename-command", "INFO", ""}, nil},
	} {
		r := dial(t, redistest.StartServer(t, c.args...).URL(), false)
		_, err := Push(ctx, f, r, "memory", nil)
		require.NoError(t, err)
		d, err := Describe(ctx, r, "memory")
		require.NoError(t, err, "%v", c.args)
		assert.True(t, d.Live)
		if c.memory == nil {
			assert.Nil(t, d.Memory, "%v", c.args)
			continue
		}
		require.NotNil(t, d.Memory, "%v", c.args)
		assert.Positive(t, d.Memory.Used)
		assert.Equal(t, c.memory.Max, d.Memory.Max)
		assert.Equal(t, c.memory.Policy, d.Memory.Policy)
		assert.Equal(t, strings.HasPrefix(c.memory.Policy, "allkeys-"), d.Memory.Evicts())
	}
}
