//go:build unix

package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/internal/redistest"
)

// proxy forwards loopback connections to a server and, while cut is
// positive, drops the successful answer to a script call after the server
// sent it: a connection lost between applying a batch and reading its answer.
// (Connection handshakes pass, so the cuts land on applied requests.)
type proxy struct {
	ln     net.Listener
	target string
	cut    atomic.Int32
	cuts   atomic.Int32
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(client)
		}
	}()
	return p
}

func (p *proxy) url() string { return "redis://" + p.ln.Addr().String() }

func (p *proxy) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	var script atomic.Bool // the request in flight runs a script
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := client.Read(buf)
			if err != nil {
				return
			}
			if bytes.Contains(bytes.ToUpper(buf[:n]), []byte("EVAL")) {
				script.Store(true)
			}
			if _, err := server.Write(buf[:n]); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if err != nil {
			return
		}
		// Only a script's successful answer is dropped: an error (such as
		// NOSCRIPT) means nothing was applied.
		if script.Swap(false) && buf[0] != '-' && p.cut.Load() > 0 && p.cut.Add(-1) >= 0 {
			p.cuts.Add(1)
			return // the request was applied; its answer is lost
		}
		if _, err := client.Write(buf[:n]); err != nil {
			return
		}
	}
}

// mirroredForFaults is a filter mirrored with small parts, a small queue and
// short timeouts, after a first workload has reached Redis.
func mirroredForFaults(t *testing.T, r Redis, seed uint64) (context.Context, *engine.Filter, *Mirror, *rand.Rand, uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	f := newFilter(t, engine.Config{Capacity: 1500, ErrorRate: 0.01, Growth: 1, Seed: seed})
	m, err := Attach(f, r, "faults", &Options{PartBytes: 4096, MaxQueue: 300, BatchSize: 64, Timeout: 300 * time.Millisecond, Backoff: 5 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	rng := rand.New(rand.NewPCG(seed, seed))
	next := workload(t, f, rng, 1500, 0)
	require.NoError(t, m.Flush(ctx))
	requireSame(t, ctx, r, "faults", f)
	return ctx, f, m, rng, next
}

// TestFaultsConverge: connections cut between a batch and its answer, Redis
// restarted empty, Redis rolled back to an older state of the mirror's own
// copy, Redis paused past the queue's bound. After each, the
// mirror converges to the file's exact bytes, and a batch Redis already
// applied is not applied again.
func TestFaultsConverge(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	p := startProxy(t, s.Addr())
	r := dial(t, p.url(), false)
	ctx, f, m, rng, next := mirroredForFaults(t, r, 11)

	t.Run("answers lost", func(t *testing.T) {
		// Small steps, so the queue stays below its bound while batches
		// are retried: every lost answer must be recovered from in place.
		// Flush empties the queue, and five operations make at most 105
		// changes (an add may repeat 20 times), against a bound of 300.
		before := m.Stats()
		p.cut.Store(8)
		for range 240 {
			next = workload(t, f, rng, 5, next)
			require.NoError(t, m.Flush(ctx))
		}
		requireSame(t, ctx, r, "faults", f)
		assert.Equal(t, int32(8), p.cuts.Load())
		stats := m.Stats()
		assert.Equal(t, before.Recopies, stats.Recopies, "no full copy for a lost answer (%+v)", stats)
		assert.Positive(t, stats.Resends, "a batch Redis had applied was recognized, not applied again (%+v)", stats)
		// A batch is found applied once, then dropped from the queue.
		assert.LessOrEqual(t, stats.Resends-before.Resends, stats.Acked-before.Acked, "more batches found applied than changes shipped")
	})
	t.Run("Redis restarted empty", func(t *testing.T) {
		before := m.Stats().Recopies
		s.Restart()
		next = workload(t, f, rng, 2000, next)
		require.NoError(t, m.Flush(ctx))
		requireSame(t, ctx, r, "faults", f)
		assert.Greater(t, m.Stats().Recopies, before, "a full copy replaced the lost one")
		// Redis answers that it holds no copy, unless the changes made
		// while it restarted overflowed the queue first.
		assert.Regexp(t, "not the one shipped to|Options.MaxQueue", m.Stats().RecopyReason)
	})
	t.Run("Redis rolled back to an older copy", func(t *testing.T) {
		// A failover to a replica the last changes had not reached, or a
		// restart from an older snapshot: Redis holds the mirror's own
		// copy at an earlier sequence. A batch that follows the later
		// sequence must not be applied onto it.
		raw := redistest.Client(t, s)
		older := dumpCopy(t, ctx, raw, "faults")
		before := m.Stats().Recopies
		for range 10 { // small steps, below the queue's bound: shipped, not copied
			next = workload(t, f, rng, 5, next)
			require.NoError(t, m.Flush(ctx))
		}
		require.Equal(t, before, m.Stats().Recopies)
		restoreCopy(t, ctx, raw, "faults", older)
		next = workload(t, f, rng, 5, next)
		require.NoError(t, m.Flush(ctx))
		requireSame(t, ctx, r, "faults", f)
		assert.Greater(t, m.Stats().Recopies, before, "a full copy replaced the older one")
		assert.Contains(t, m.Stats().RecopyReason, "TBSEQ", "Redis named the sequence it holds")
	})
	t.Run("Redis paused past the queue's bound", func(t *testing.T) {
		before := m.Stats().Recopies
		s.Pause()
		next = workload(t, f, rng, 1500, next)
		assert.LessOrEqual(t, m.Stats().QueueDepth, 300, "the queue stays bounded")
		time.Sleep(100 * time.Millisecond)
		s.Resume()
		require.NoError(t, m.Flush(ctx))
		requireSame(t, ctx, r, "faults", f)
		assert.Greater(t, m.Stats().Recopies, before)
		assert.Contains(t, m.Stats().RecopyReason, "Options.MaxQueue")
	})
	require.NoError(t, m.Close())
	require.NoError(t, f.Close())
	assert.NoError(t, engine.Verify(f.Path()), "the local file is whole")
}

// TestContextBoundsACall: a call's context bounds it against a Redis that
// stopped answering, on one server and on a cluster: a checker returns
// its context's error, rather than waiting for the client's own read
// timeout.
func TestContextBoundsACall(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	c := redistest.StartCluster(t)
	for _, target := range []struct {
		name          string
		url           string
		cluster       bool
		pause, resume func()
	}{
		{"server", s.URL(), false, s.Pause, s.Resume},
		{"cluster", c.URL(), true, c.Pause, c.Resume},
	} {
		t.Run(target.name, func(t *testing.T) {
			r := dial(t, target.url, target.cluster)
			f := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Seed: 30})
			require.NoError(t, f.Add(key(1), 1))
			ctx := context.Background()
			require.NoError(t, push(ctx, f, r, "bounded", nil))
			checker, err := NewChecker(ctx, r, "bounded")
			require.NoError(t, err)
			// Redis goes on 3 s later, well before go-redis's own read
			// timeout: a call that outlasts its context returns after.
			target.pause()
			var goneOn atomic.Bool
			resume := time.AfterFunc(3*time.Second, func() { goneOn.Store(true); target.resume() })
			defer func() {
				if resume.Stop() {
					target.resume()
				}
			}()
			short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			_, err = checker.Contains(short, key(1))
			assert.False(t, goneOn.Load(), "the call returned while Redis was stopped")
			assert.ErrorIs(t, err, context.DeadlineExceeded)

			// Cancelled, with no deadline: go-redis reads on, the call
			// returns.
			cancelled, cancel := context.WithCancel(ctx)
			time.AfterFunc(200*time.Millisecond, cancel)
			_, err = checker.Contains(cancelled, key(1))
			assert.False(t, goneOn.Load(), "the cancelled call returned while Redis was stopped")
			assert.ErrorIs(t, err, context.Canceled)
		})
	}
}

// TestClusterFaultsConverge: a cluster restarted empty, and a cluster
// paused past the queue's bound; the mirror converges to the exact bytes.
// (Lost answers are tested on one server: a proxy cannot stand between a
// cluster client and the nodes the cluster announces.)
func TestClusterFaultsConverge(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	r := dial(t, c.URL(), true)
	ctx, f, m, rng, next := mirroredForFaults(t, r, 13)

	before := m.Stats().Recopies
	c.Restart()
	next = workload(t, f, rng, 1000, next)
	require.NoError(t, m.Flush(ctx))
	requireSame(t, ctx, r, "faults", f)
	assert.Greater(t, m.Stats().Recopies, before, "restarted empty: a full copy")

	before = m.Stats().Recopies
	c.Pause()
	workload(t, f, rng, 1500, next)
	assert.LessOrEqual(t, m.Stats().QueueDepth, 300)
	c.Resume()
	require.NoError(t, m.Flush(ctx))
	requireSame(t, ctx, r, "faults", f)
	assert.Greater(t, m.Stats().Recopies, before, "paused past the bound: a full copy")
}

// TestCopyIsSeenWhole: while full copies replace each other, a checker
// never reports absent a key present in the old copy and the new.
func TestCopyIsSeenWhole(t *testing.T) {
	t.Parallel()
	eachRedis(t, testCopyIsSeenWhole)
}

func testCopyIsSeenWhole(t *testing.T, r Redis) {
	ctx := context.Background()
	f := newFilter(t, engine.Config{Capacity: 5000, ErrorRate: 0.01, Growth: 1, Seed: 2})
	for i := range uint64(5000) {
		require.NoError(t, f.Add(key(i), i))
	}
	require.NoError(t, push(ctx, f, r, "whole", smallParts))
	c, err := NewChecker(ctx, r, "whole")
	require.NoError(t, err)
	keys := make([][]byte, 500)
	for i := range keys {
		keys[i] = key(uint64(i * 10))
	}
	var stop, ended atomic.Bool
	var absent, checks atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		defer ended.Store(true)
		var out []bool
		for !stop.Load() {
			out, err := c.ContainsBatch(ctx, keys, out)
			if err != nil {
				t.Error(err)
				return
			}
			checks.Add(1)
			for _, present := range out {
				if !present {
					absent.Add(1)
				}
			}
		}
	})
	for i := range uint64(30) {
		require.NoError(t, f.Add(key(10_000+i), 5000+i))
		checked := checks.Load()
		require.NoError(t, push(ctx, f, r, "whole", smallParts))
		// Copies made back to back, each faster than a check under the
		// race detector, could starve the checker of a copy that stays
		// live for a whole read; a real copy takes far longer than a check.
		for checks.Load() == checked && !ended.Load() {
			time.Sleep(time.Millisecond)
		}
	}
	stop.Store(true)
	wg.Wait()
	assert.Zero(t, absent.Load())
	assert.Positive(t, checks.Load())
	t.Logf("%d batches checked during 30 full copies", checks.Load())
}

// TestBadAnswers: what the mirror did not write gives clear errors, never a
// panic, never a damaged local file.
func TestBadAnswers(t *testing.T) {
	t.Parallel()
	eachRedisRaw(t, testBadAnswers)
}

// eachRedisRaw is eachRedis for tests that also reach Redis with a plain
// client, to write what the mirror would not or to list keys.
func eachRedisRaw(t *testing.T, test func(*testing.T, Redis, redis.UniversalClient)) {
	t.Run("standalone", func(t *testing.T) {
		t.Parallel()
		s := redistest.StartServer(t)
		test(t, dial(t, s.URL(), false), redistest.Client(t, s))
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		c := redistest.StartCluster(t)
		test(t, dial(t, c.URL(), true), c.ClusterClient())
	})
}

func testBadAnswers(t *testing.T, r Redis, raw redis.UniversalClient) {
	ctx := context.Background()
	f := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Growth: 1, Seed: 9})
	workload(t, f, rand.New(rand.NewPCG(5, 5)), 3000, 0)

	_, err := NewChecker(ctx, r, "nothing")
	assert.ErrorIs(t, err, ErrNotMirrored)
	_, err = NewChecker(ctx, r, "{bad}")
	assert.ErrorIs(t, err, ErrInvalidName)

	require.NoError(t, raw.Set(ctx, "{foreign}:meta", "somebody else's value", 0).Err())
	_, err = NewChecker(ctx, r, "foreign")
	assert.ErrorIs(t, err, ErrBadAnswer)
	assert.ErrorIs(t, push(ctx, f, r, "foreign", nil), ErrBadAnswer, "a foreign key is not overwritten")
	assert.Equal(t, "somebody else's value", raw.Get(ctx, "{foreign}:meta").Val())
	m, err := Attach(f, r, "foreign", nil)
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	assert.Error(t, m.Flush(short))
	cancel()
	assert.Contains(t, m.Stats().LastError, "not a tallybloom mirror")
	require.NoError(t, m.Close())

	require.NoError(t, raw.HSet(ctx, "{claimed}:owner", "not", "a claim").Err())
	assert.ErrorIs(t, push(ctx, f, r, "claimed", nil), ErrBadAnswer, "a foreign claim is not overwritten")
	assert.Equal(t, "hash", raw.Type(ctx, "{claimed}:owner").Val())

	require.NoError(t, raw.HSet(ctx, "{other}:meta", "format", "something-else", "gen", "1").Err())
	_, err = Pull(ctx, r, "other")
	assert.ErrorIs(t, err, ErrBadAnswer)
	_, err = Describe(ctx, r, "other")
	assert.ErrorIs(t, err, ErrBadAnswer, "a live copy of another format is not described")
	assert.ErrorContains(t, err, `meta format "something-else"`)
	require.NoError(t, raw.HSet(ctx, "{pend}:pending", "gen", "soon").Err())
	_, err = Describe(ctx, r, "pend")
	assert.ErrorIs(t, err, ErrBadAnswer)
	assert.ErrorContains(t, err, `pending generation "soon"`)

	require.NoError(t, push(ctx, f, r, "good", smallParts))
	require.NoError(t, raw.HSet(ctx, "{good}:meta", "dir", `[{"level":0,"first_id":0,"capacity":10,"k":99,"blocks":1}]`).Err())
	_, err = NewChecker(ctx, r, "good")
	assert.ErrorIs(t, err, ErrBadAnswer, "a hostile geometry is refused before use")
	require.NoError(t, raw.HSet(ctx, "{good}:meta", "dir", `[{"level":0,"first_id":0,"capacity":10,"k":7,"blocks":1073741824}]`).Err())
	_, err = Pull(ctx, r, "good")
	assert.Error(t, err, "a copy claiming 64 GiB it does not hold")

	require.NoError(t, push(ctx, f, r, "parts", smallParts))
	require.NoError(t, raw.Del(ctx, "{parts}:g1:l0:p1").Err())
	path := filepath.Join(t.TempDir(), "restored.tb")
	_, err = Restore(ctx, r, "parts", path, nil)
	assert.ErrorIs(t, err, ErrPartLost)
	assert.NoFileExists(t, path, "a failed restore leaves no file")
	c, err := NewChecker(ctx, r, "parts")
	require.NoError(t, err)
	// Enough keys that some fall in each part.
	var keys [][]byte
	for i := range 200 {
		keys = append(keys, key(uint64(i)))
	}
	_, err = c.ContainsBatch(ctx, keys, nil)
	assert.ErrorIs(t, err, ErrPartLost, "a lost part is not read as zeros")

	require.NoError(t, raw.Del(ctx, "{parts}:g1:l0:p0").Err())
	require.NoError(t, raw.RPush(ctx, "{parts}:g1:l0:p0", "not a string").Err())
	_, err = c.ContainsBatch(ctx, keys, nil)
	assert.Error(t, err)
	assert.False(t, errors.Is(err, ErrNotMirrored))

	require.NoError(t, f.Close())
	assert.NoError(t, engine.Verify(f.Path()), "the local file is untouched")
}

// TestOverflowDuringACopy: more changes than the queue holds, made while a
// full copy is being made, before the copy takes its base or after, do not
// make the copy start again: those before are in the base, and the blocks
// of those after are read again before the switch, not queued. One copy
// becomes live and Redis ends holding the file.
func TestOverflowDuringACopy(t *testing.T) {
	const maxQueue = 50
	for _, c := range []struct {
		name       string
		beforeBase bool
	}{
		{"before the base", true},
		{"after the base", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := redistest.StartServer(t)
			starts := &countingStarts{Redis: dial(t, s.URL(), false)}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			f := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Seed: 3})
			m, err := Attach(f, starts, "overflow", &Options{MaxQueue: maxQueue, Backoff: time.Millisecond})
			require.NoError(t, err)
			defer m.Close()
			require.NoError(t, m.Flush(ctx))
			first := m.Stats().Recopies

			// While the shipper makes the copy it drains nothing, so these
			// adds overflow the queue. They run on the shipper's goroutine.
			next := uint64(1)
			overflow := func() {
				for range maxQueue + 1 {
					assert.NoError(t, f.Add(key(next), next))
					next++
				}
			}
			var once sync.Once
			m.outline = func() engine.Stats {
				if c.beforeBase {
					once.Do(overflow)
					return f.Stats()
				}
				base := f.Stats()
				once.Do(overflow)
				return base
			}
			s.Restart() // Redis loses its copy: the next change finds out
			starts.n.Store(0)
			require.NoError(t, f.Add(key(0), 0))
			require.NoError(t, m.Flush(ctx)) // the copy, and so the overflow, is done
			require.NoError(t, m.Flush(ctx)) // and whatever follows from it
			requireSame(t, ctx, starts, "overflow", f)
			assert.Equal(t, first+1, m.Stats().Recopies, "%+v", m.Stats())
			assert.Equal(t, int32(1), starts.n.Load(), "copies started")
		})
	}
}

// TestOverflowCopiesChangedBlocks: when the queue gives up on changes while
// Redis is away but keeps the mirror's copy, the next copy starts from that
// copy, cloned inside Redis, and writes only the blocks changed since; when
// Redis lost it, the copy is written in full. On one server and a cluster.
func TestOverflowCopiesChangedBlocks(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	c := redistest.StartCluster(t)
	// A server as Redis before 6.2 is, for the mirror: without COPY.
	old := redistest.StartServer(t, "--rename-command", "COPY", "")
	for _, target := range []struct {
		name    string
		url     string
		cluster bool
		raw     redis.UniversalClient
		away    func() (back func())
		kept    bool   // Redis keeps the copy while away, and can clone it
		full    string // why the copy is written in full, if it is
	}{
		{"server paused", s.URL(), false, redistest.Client(t, s), func() func() { s.Pause(); return s.Resume }, true, ""},
		{"cluster paused", c.URL(), true, c.ClusterClient(), func() func() { c.Pause(); return c.Resume }, true, ""},
		{"server restarted empty", s.URL(), false, redistest.Client(t, s), func() func() { s.Kill(); return s.Restart }, false,
			"in full, as mirror: the copy Redis holds cannot be cloned: Redis no longer holds it"},
		{"server without COPY paused", old.URL(), false, redistest.Client(t, old), func() func() { old.Pause(); return old.Resume }, false,
			"in full, as mirror: the copy Redis holds cannot be cloned: Redis has no COPY, which came in 6.2: ERR Unknown Redis command"},
	} {
		t.Run(target.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// The parts a copy writes are counted by name, not by call: a
			// call that timed out on a busy machine and was made again
			// writes its part once more.
			var mu sync.Mutex
			parts := map[string]bool{}
			partsWritten := func() int {
				mu.Lock()
				defer mu.Unlock()
				n := len(parts)
				clear(parts)
				return n
			}
			var clones atomic.Int32
			r := callHook{dial(t, target.url, target.cluster), func(sc *Script, keys []string) {
				switch sc {
				case writeScript:
					mu.Lock()
					parts[keys[0]] = true
					mu.Unlock()
				case cloneScript:
					clones.Add(1)
				}
			}}
			f, next := filledFilter(t, 20_000, 32, 10_000)
			name := strings.ReplaceAll(target.name, " ", "-")
			m, err := Attach(f, r, name, &Options{MaxQueue: 50, PartBytes: 4096, Timeout: 100 * time.Millisecond, Backoff: time.Millisecond})
			require.NoError(t, err)
			defer m.Close()
			require.NoError(t, m.Flush(ctx))
			written := partsWritten()
			require.Positive(t, written)

			back := target.away()
			addKeys(t, f, &next, 500) // ten times the queue
			back()
			require.NoError(t, m.Flush(ctx))
			requireSame(t, ctx, r, name, f)
			stats := m.Stats()
			assert.Equal(t, uint64(2), stats.Recopies, "%+v", stats)
			again := partsWritten()
			if target.kept {
				assert.Zero(t, again, "parts written in full")
				assert.Positive(t, clones.Load(), "parts cloned in Redis")
				assert.Contains(t, stats.RecopyReason, "from the copy Redis held")
			} else {
				assert.Equal(t, written, again, "parts written in full")
				assert.NotContains(t, stats.RecopyReason, "from the copy Redis held")
				assert.Contains(t, stats.RecopyReason, target.full)
			}
			// Nothing is left of a clone begun and given up: only the live
			// copy's keys remain.
			live, err := readMeta(ctx, r, keys{name})
			require.NoError(t, err)
			assert.Equal(t, attachedKeys(f, name, live.gen, 4096), keysLike(t, target.raw, "{"+name+"}*"))
		})
	}
}

// TestCloneOfACopyMissingAPartIsWrittenInFull: the copy Redis kept while
// the queue gave up had lost a part (evicted). The next copy does not
// clone it, which would make a copy without that part live, but writes
// the copy in full.
func TestCloneOfACopyMissingAPartIsWrittenInFull(t *testing.T) {
	s := redistest.StartServer(t)
	raw := redistest.Client(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := dial(t, s.URL(), false)
	f, next := filledFilter(t, 20_000, 36, 10_000)
	m, err := Attach(f, r, "holed", &Options{MaxQueue: 50, PartBytes: 4096, Timeout: 100 * time.Millisecond, Backoff: time.Millisecond})
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Flush(ctx))
	d, err := Describe(ctx, r, "holed")
	require.NoError(t, err)
	lost := keys{"holed"}.part(d.Generation, d.SubFilters[0].Level, 3)
	require.Equal(t, int64(1), raw.Del(ctx, lost).Val())

	s.Pause()
	addKeys(t, f, &next, 500) // ten times the queue
	s.Resume()
	require.NoError(t, m.Flush(ctx))
	requireSame(t, ctx, r, "holed", f)
	stats := m.Stats()
	assert.Equal(t, uint64(2), stats.Recopies, "%+v", stats)
	assert.Contains(t, stats.RecopyReason, "in full, as mirror: the copy Redis holds cannot be cloned: Redis no longer holds it")
	live, err := readMeta(ctx, r, keys{"holed"})
	require.NoError(t, err)
	assert.Equal(t, attachedKeys(f, "holed", live.gen, 4096), keysLike(t, raw, "{holed}*"), "only the live copy's keys")
}

// countingStarts counts the full copies started through it.
type countingStarts struct {
	Redis
	n atomic.Int32
}

func (c *countingStarts) Eval(ctx context.Context, s *Script, readOnly bool, keys []string, args ...any) (any, error) {
	if s == startScript {
		c.n.Add(1)
	}
	return c.Redis.Eval(ctx, s, readOnly, keys, args...)
}

// failingSwitch is a client whose switch to a new copy fails: the writer
// stopped, or Redis went away, between writing a copy and making it live.
type failingSwitch struct{ Redis }

func (f failingSwitch) Eval(ctx context.Context, s *Script, readOnly bool, keys []string, args ...any) (any, error) {
	if s == switchScript {
		return nil, errors.New("connection lost before the switch")
	}
	return f.Redis.Eval(ctx, s, readOnly, keys, args...)
}

// keysLike lists the keys matching pattern on every node.
func keysLike(t testingT, raw redis.UniversalClient, pattern string) []string {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var names []string
	collect := func(ctx context.Context, c *redis.Client) error {
		found, err := c.Keys(ctx, pattern).Result()
		mu.Lock()
		defer mu.Unlock()
		names = append(names, found...)
		return err
	}
	switch c := raw.(type) {
	case *redis.ClusterClient:
		require.NoError(t, c.ForEachMaster(ctx, collect))
	case *redis.Client:
		require.NoError(t, collect(ctx, c))
	}
	slices.Sort(names)
	return names
}

// copyKeys are the keys a live copy of f at gen takes, meta first.
func copyKeys(f *engine.Filter, name string, gen uint64, partBytes uint64) []string {
	k := keys{name}
	names := []string{k.meta(), k.gens()}
	for _, sub := range f.Stats().SubFilters {
		for p := range parts(sub.Bytes, partBytes) {
			names = append(names, k.part(gen, sub.Level, p))
		}
	}
	slices.Sort(names)
	return names
}

// attachedKeys are copyKeys and the claim of the mirror attached.
func attachedKeys(f *engine.Filter, name string, gen uint64, partBytes uint64) []string {
	names := append(copyKeys(f, name, gen, partBytes), keys{name}.owner())
	slices.Sort(names)
	return names
}

// TestInterruptedCopyLeavesNothing: a copy that never became live is
// deleted by the next copy, whatever shape it had, so Redis ends holding
// the live copy's keys and nothing else.
func TestInterruptedCopyLeavesNothing(t *testing.T) {
	t.Parallel()
	eachRedisRaw(t, testInterruptedCopyLeavesNothing)
}

func testInterruptedCopyLeavesNothing(t *testing.T, r Redis, raw redis.UniversalClient) {
	ctx := context.Background()
	const name = "strays"
	chain := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Growth: 1, Seed: 4})
	for i := range uint64(3500) {
		require.NoError(t, chain.Add(key(i), i))
	}
	require.Len(t, chain.Stats().SubFilters, 4)
	small := newFilter(t, engine.Config{Capacity: 300, ErrorRate: 0.01, Fixed: true, Seed: 5})
	for i := range uint64(300) {
		require.NoError(t, small.Add(key(i), i))
	}

	// The first copy ever, stopped before its switch: nothing is live.
	assert.Error(t, push(ctx, chain, failingSwitch{r}, name, smallParts))
	assert.Greater(t, len(keysLike(t, raw, "{strays}:g1:*")), len(copyKeys(small, name, 1, 4096)))
	_, err := NewChecker(ctx, r, name)
	assert.ErrorIs(t, err, ErrNotMirrored)

	// The next copy, of another shape, takes the next generation.
	require.NoError(t, push(ctx, small, r, name, smallParts))
	requireSame(t, ctx, r, name, small)
	assert.Equal(t, copyKeys(small, name, 2, 4096), keysLike(t, raw, "{strays}*"))

	// Stopped again, now beside a live copy, which stays live and whole.
	assert.Error(t, push(ctx, chain, failingSwitch{r}, name, smallParts))
	requireSame(t, ctx, r, name, small)
	require.NoError(t, push(ctx, small, r, name, smallParts))
	requireSame(t, ctx, r, name, small)
	assert.Equal(t, copyKeys(small, name, 4, 4096), keysLike(t, raw, "{strays}*"))

	// A foreign value under the record's name is refused, not overwritten.
	require.NoError(t, raw.RPush(ctx, keys{name}.pending(), "a list").Err())
	assert.ErrorIs(t, push(ctx, small, r, name, smallParts), ErrBadAnswer)
	assert.Equal(t, "list", raw.Type(ctx, keys{name}.pending()).Val())
	require.NoError(t, raw.Del(ctx, keys{name}.pending()).Err())

	// A pending hash the mirror did not write deletes nothing but itself;
	// one that names the live copy leaves it alone.
	live := small.Stats()
	huge := []engine.SubFilterStats{{Level: 0, Capacity: 1000, K: 7, Blocks: 1 << 40}}
	for _, record := range [][]any{
		{"garbage", "fields"},
		metaFields(4, live.MemSeq, 4096, live.Config, live.SubFilters),
		metaFields(9, 1, 64, live.Config, huge),
	} {
		require.NoError(t, raw.HSet(ctx, keys{name}.pending(), record...).Err())
		require.NoError(t, discardPending(ctx, r, keys{name}))
		requireSame(t, ctx, r, name, small)
		assert.Equal(t, copyKeys(small, name, 4, 4096), keysLike(t, raw, "{strays}*"), "record %q", record)
	}
}

// TestRedisOutOfMemory: a Redis whose used memory is over its maxmemory,
// with noeviction, refuses the writer's writes as ErrRedisFull: Push
// returns it, and a Mirror shows it in Stats and catches up once Redis has
// room. Checkers read the live copy all the while.
func TestRedisOutOfMemory(t *testing.T) {
	s := redistest.StartServer(t, "--maxmemory-policy", "noeviction")
	raw := redistest.Client(t, s)
	r := dial(t, s.URL(), false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := newFilter(t, engine.Config{Capacity: 20_000, ErrorRate: 0.01, Seed: 3})
	for i := range uint64(1000) {
		require.NoError(t, f.Add(key(i), 1))
	}
	_, err := Push(ctx, f, r, "full", nil)
	require.NoError(t, err)

	// Fill Redis to its maxmemory with other keys.
	info, err := raw.Info(ctx, "memory").Result()
	require.NoError(t, err)
	var usedMemory int64
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			usedMemory, err = strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
		}
	}
	require.Positive(t, usedMemory)
	require.NoError(t, raw.ConfigSet(ctx, "maxmemory", strconv.FormatInt(usedMemory+1<<20, 10)).Err())
	junk := strings.Repeat("x", 64<<10)
	for i := 0; ; i++ {
		if err := raw.Set(ctx, "junk-"+strconv.Itoa(i), junk, 0).Err(); err != nil {
			require.ErrorContains(t, err, "OOM")
			break
		}
		require.Less(t, i, 1000, "Redis took 64 MiB past a maxmemory 1 MiB above its use")
	}

	for i := uint64(1000); i < 2000; i++ {
		require.NoError(t, f.Add(key(i), 1))
	}
	_, err = Push(ctx, f, r, "full", nil)
	require.ErrorIs(t, err, ErrRedisFull)
	assert.Contains(t, err.Error(), "OOM command not allowed")

	c, err := NewChecker(ctx, r, "full")
	require.NoError(t, err, "a checker starts on a full Redis")
	for _, k := range []uint64{0, 999} {
		present, err := c.Contains(ctx, key(k))
		require.NoError(t, err)
		assert.True(t, present, "key %d, in the live copy", k)
	}

	m, err := Attach(f, r, "full", &Options{Backoff: 5 * time.Millisecond, Timeout: time.Second})
	require.NoError(t, err)
	defer m.Close()
	require.Eventually(t, func() bool {
		return strings.Contains(m.Stats().LastError, ErrRedisFull.Error())
	}, 10*time.Second, 10*time.Millisecond, "the mirror says why it does not catch up")
	require.NoError(t, raw.ConfigSet(ctx, "maxmemory", "0").Err())
	require.NoError(t, m.Flush(ctx))
	requireSame(t, ctx, r, "full", f)
	present, err := c.Contains(ctx, key(1999))
	require.NoError(t, err)
	assert.True(t, present, "the new copy, once Redis had room")
}

// dumpCopy is every key of name's copy but the claim on the name, as DUMP
// serializes it.
func dumpCopy(t *testing.T, ctx context.Context, raw *redis.Client, name string) map[string]string {
	t.Helper()
	keys, err := raw.Keys(ctx, "{"+name+"}:*").Result()
	require.NoError(t, err)
	dump := map[string]string{}
	for _, k := range keys {
		if k == "{"+name+"}:owner" {
			continue
		}
		v, err := raw.Dump(ctx, k).Result()
		require.NoError(t, err)
		dump[k] = v
	}
	require.NotEmpty(t, dump)
	return dump
}

// restoreCopy puts back a copy dumpCopy took, deleting the keys written
// since: what Redis holds after a failover to a replica that was behind.
func restoreCopy(t *testing.T, ctx context.Context, raw *redis.Client, name string, dump map[string]string) {
	t.Helper()
	keys, err := raw.Keys(ctx, "{"+name+"}:*").Result()
	require.NoError(t, err)
	for _, k := range keys {
		if _, ok := dump[k]; !ok && k != "{"+name+"}:owner" {
			require.NoError(t, raw.Del(ctx, k).Err())
		}
	}
	for k, v := range dump {
		require.NoError(t, raw.RestoreReplace(ctx, k, 0, v).Err())
	}
}

// TestShipRefusesABatchThatSkipsAChange: a batch whose first change is not
// the one after the sequence Redis holds is never shipped. Applied, it
// would move Redis's sequence past the change it skipped, whose counters
// Redis never took; the mirror asks for a full copy instead. (The queue
// hands out its changes in order, so only a fault of the mirror's own
// leaves such a gap: this test makes one by hand.)
func TestShipRefusesABatchThatSkipsAChange(t *testing.T) {
	s := redistest.StartServer(t)
	raw := redistest.Client(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	subs := []engine.SubFilterStats{{Level: 0, Blocks: 1}}
	m := &Mirror{r: dial(t, s.URL(), false), keys: keys{"gap"}, opts: (*Options)(nil).withDefaults(), owner: newOwner(claimTTL),
		ctx: ctx, gen: 3, seq: 10, subs: subs}
	m.mu.acked = sync.NewCond(&m.mu) // as Attach makes it: a batch shipped wakes Flush
	require.NoError(t, raw.HSet(ctx, m.keys.meta(), metaFields(3, 10, m.opts.PartBytes, engine.Config{}, subs)...).Err())
	part := m.keys.part(3, 0, 0)
	require.NoError(t, raw.Set(ctx, part, make([]byte, 64), 0).Err())
	write := func(seq uint64, b byte) change {
		return change{seq: seq, counters: []engine.CounterWrite{{Level: 0, Offset: 8, Bytes: []byte{b}}}}
	}

	require.NoError(t, m.ship([]change{write(12, 1), write(13, 2)}), "change 11 is missing")
	assert.True(t, m.mu.needCopy, "a full copy is asked for")
	assert.Contains(t, m.mu.copyReason, "the queue starts at change 12, Redis holds 10")
	assert.Equal(t, "10", raw.HGet(ctx, m.keys.meta(), "seq").Val(), "Redis's sequence")
	assert.Equal(t, string(make([]byte, 64)), raw.Get(ctx, part).Val(), "Redis's counters")
	assert.Equal(t, uint64(10), m.seq, "the sequence the mirror holds Redis at")
}

// TestReadersGiveUpOnACopyThatKeepsChanging: a check, a Pull or a Restore
// whose copy changes before every read, in a way that sends it back to
// the start, reads checkAttempts or wholeAttempts times, then says so,
// rather than read for as long as its context lasts. A check starts again when another copy
// becomes live or the copy's sub-filters change, and reads on when the
// copy's writer ships a change; Pull and Restore start again on any of
// them. The Restore leaves no file.
func TestReadersGiveUpOnACopyThatKeepsChanging(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	raw := redistest.Client(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Seed: 33})
	require.NoError(t, f.Add(key(1), 1))
	plain := dial(t, s.URL(), false)
	meta := keys{"churn"}.meta()
	path := filepath.Join(t.TempDir(), "churn.tb")
	readers := []struct {
		name     string
		attempts int
		read     func(context.Context, Redis) error
	}{
		{"check", checkAttempts, func(ctx context.Context, r Redis) error {
			c, err := NewChecker(ctx, r, "churn")
			if err != nil {
				return err
			}
			_, err = c.Contains(ctx, key(1))
			return err
		}},
		{"pull", wholeAttempts, func(ctx context.Context, r Redis) error {
			_, err := Pull(ctx, r, "churn")
			return err
		}},
		{"restore", wholeAttempts, func(ctx context.Context, r Redis) error {
			g, err := Restore(ctx, r, "churn", path, nil)
			if err == nil {
				g.Close()
			}
			return err
		}},
	}
	// Each change is made before every read of the copy's counters. (A
	// Restore reads from a goroutine of its own, so they assert.)
	changes := []struct {
		name   string
		change func()
		why    string          // what the error says of it
		reads  map[string]bool // the readers it sends back to the start
	}{
		{"another copy", func() { assert.NoError(t, raw.HIncrBy(ctx, meta, "gen", 1).Err()) },
			"another copy became live", map[string]bool{"check": true, "pull": true, "restore": true}},
		{"a shipped change", func() { assert.NoError(t, raw.HIncrBy(ctx, meta, "seq", 1).Err()) },
			"its writer shipped changes", map[string]bool{"pull": true, "restore": true}},
		// The same sub-filters written with one more space: another
		// directory to its checksum, the same to a reader that decodes it.
		{"new sub-filters", func() {
			dir, err := raw.HGet(ctx, meta, "dir").Result()
			assert.NoError(t, err)
			assert.NoError(t, raw.HSet(ctx, meta, "dir", dir+" ").Err())
		}, "its sub-filters changed", map[string]bool{"check": true}},
	}
	for _, change := range changes {
		for _, reader := range readers {
			t.Run(change.name+"/"+reader.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				// A whole copy for each: the last one's changes leave the
				// meta hash naming parts no copy wrote.
				require.NoError(t, push(ctx, f, plain, "churn", nil))
				reads := 0
				r := callHook{plain, func(sc *Script, _ []string) {
					if sc == readScript {
						reads++
						change.change()
					}
				}}
				start := time.Now()
				err := reader.read(ctx, r)
				if !change.reads[reader.name] {
					require.NoError(t, err, "read on")
					assert.Equal(t, 1, reads)
					if reader.name == "restore" {
						require.NoError(t, os.Remove(path))
					}
					return
				}
				require.ErrorIs(t, err, ErrCopyChanging)
				assert.ErrorContains(t, err, fmt.Sprintf("%s (each of %d reads)", change.why, reader.attempts))
				assert.NoError(t, ctx.Err(), "given up before the context ended")
				assert.Equal(t, reader.attempts, reads)
				if reader.attempts == wholeAttempts {
					// The pauses of 1, 2, 4 ms and so on, at most 100 ms.
					assert.GreaterOrEqual(t, time.Since(start), 1300*time.Millisecond, "paused between reads")
				}
				assert.NoFileExists(t, path)
			})
		}
	}
}
