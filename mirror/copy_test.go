//go:build unix

package mirror

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"runtime/debug"
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

// duringCopy is a client that calls hook with the key of every part a full
// copy writes, before writing it: a test changes the filter there, in the
// middle of a copy. It calls switched once a copy became live.
type duringCopy struct {
	Redis
	hook     func(part string)
	switched func()
}

func (d duringCopy) Eval(ctx context.Context, s *Script, readOnly bool, keys []string, args ...any) (any, error) {
	if s == writeScript {
		d.hook(keys[0])
	}
	answer, err := d.Redis.Eval(ctx, s, readOnly, keys, args...)
	if s == switchScript && err == nil {
		d.switched()
	}
	return answer, err
}

// TestCopyWhileTheFilterChanges: a full copy is written while the filter
// keeps changing: adds and removes into blocks already copied and blocks
// not yet copied, a sub-filter opened, sub-filters retired, before and
// while their counters are copied. The copy catches up before it becomes
// live, and Redis ends holding exactly the file.
func TestCopyWhileTheFilterChanges(t *testing.T) {
	s := redistest.StartServer(t)
	base := dial(t, s.URL(), false)
	cfg := engine.Config{Capacity: 20_000, ErrorRate: 0.01, Seed: 7}
	for _, c := range []struct {
		name   string
		keys   uint64 // added before the mirror attaches
		at     string // the part whose write triggers the change
		change func(t testingT, f *engine.Filter, next *uint64)
		starts int32
	}{
		{"adds and removes", 15_000, ":l0:p20", func(t testingT, f *engine.Filter, next *uint64) {
			addKeys(t, f, next, 3_000)
			for i := uint64(1); i <= 3_000; i += 3 {
				require.NoError(t, f.Remove(key(i), i))
			}
		}, 1},
		{"a sub-filter opened", 15_000, ":l0:p10", func(t testingT, f *engine.Filter, next *uint64) {
			addKeys(t, f, next, 8_000)
			require.Len(t, f.Stats().SubFilters, 2)
		}, 1},
		{"a sub-filter retired while it is copied", 25_000, ":l0:p5", func(t testingT, f *engine.Filter, next *uint64) {
			dropOldest(t, f)
			addKeys(t, f, next, 100)
		}, 2},
		{"a sub-filter retired once copied", 25_000, ":l1:p0", func(t testingT, f *engine.Filter, next *uint64) {
			dropOldest(t, f)
			addKeys(t, f, next, 100)
		}, 1},
		{"a level retired and opened again while it is copied", 25_000, ":l0:p5", func(t testingT, f *engine.Filter, next *uint64) {
			// The new sub-filter takes the lowest free level, the one
			// being copied, with the same shape: the copy reads on from
			// it, and the replayed retirement and opening wipe what it read.
			dropOldest(t, f)
			addKeys(t, f, next, 35_100)
			subs := f.Stats().SubFilters
			require.Len(t, subs, 2)
			require.Equal(t, 0, subs[1].Level)
		}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			f := newFilter(t, cfg)
			next := uint64(1)
			addKeys(t, f, &next, c.keys)
			name := strings.ReplaceAll(c.name, " ", "-")
			triggered := atomic.Bool{}
			r := &countingStarts{Redis: duringCopy{base, func(part string) {
				if strings.HasSuffix(part, c.at) && triggered.CompareAndSwap(false, true) {
					inHook(t, func(t testingT) { c.change(t, f, &next) })
				}
			}, func() {
				// Nothing changes the filter after the change above, so the
				// copy, caught up before its switch, is the file's.
				sameAsFile(t, ctx, base, name, f)
			}}}
			m, err := Attach(f, r, name, smallParts)
			require.NoError(t, err)
			defer m.Close()
			require.NoError(t, m.Flush(ctx))
			require.True(t, triggered.Load(), "the change ran during the copy")
			requireSame(t, ctx, r, name, f)
			assert.Equal(t, uint64(1), m.Stats().Recopies)
			assert.Equal(t, c.starts, r.n.Load(), "copies started")

			// The mirror goes on shipping to the copy it made live.
			addKeys(t, f, &next, 50)
			require.NoError(t, m.Flush(ctx))
			requireSame(t, ctx, r, name, f)
		})
	}
}

// patching is a client that counts the writes of a full copy's catch-up
// (patchScript) and calls first before the first.
type patching struct {
	Redis
	n     *atomic.Int32
	first func()
}

func (p patching) Eval(ctx context.Context, s *Script, readOnly bool, keys []string, args ...any) (any, error) {
	if s == patchScript && p.n.Add(1) == 1 && p.first != nil {
		p.first()
	}
	return p.Redis.Eval(ctx, s, readOnly, keys, args...)
}

// TestCopyUnderChangesBeyondTheQueue: a full copy made while the filter
// never stops changing, with many times more changes than Options.MaxQueue
// made while it is written, becomes live at its first try: it reads again
// the blocks the changes touched, in rounds, rather than queueing them, and
// its last round is exact.
func TestCopyUnderChangesBeyondTheQueue(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f, next := filledFilter(t, 200_000, 26, 50_000)

	var stop atomic.Bool
	var during atomic.Uint64 // changes committed while the copy was written
	start := f.Stats().MemSeq
	writer := make(chan uint64)
	go func() {
		i := next
		defer func() { writer <- i }()
		for !stop.Load() {
			for range 100 {
				if err := f.Add(key(i), i); err != nil {
					t.Error(err)
					return
				}
				i++
			}
			time.Sleep(time.Millisecond)
		}
	}()
	patches := &atomic.Int32{}
	var startsAtSwitch atomic.Int32
	r := &countingStarts{}
	r.Redis = patching{duringCopy{slowWrites{dial(t, s.URL(), false), time.Millisecond}, func(string) {}, func() {
		if startsAtSwitch.CompareAndSwap(0, r.n.Load()) {
			stop.Store(true)
			during.Store(f.Stats().MemSeq - start)
		}
	}}, patches, nil}
	const maxQueue = 50
	m, err := Attach(f, r, "busy", &Options{MaxQueue: maxQueue, PartBytes: 4096, Backoff: 10 * time.Millisecond, holdBytes: 16 << 10})
	require.NoError(t, err)
	defer m.Close()
	next = <-writer // the writer stops once the first copy is live
	require.NoError(t, m.Flush(ctx))
	requireSame(t, ctx, r, "busy", f)
	assert.Equal(t, int32(1), startsAtSwitch.Load(), "copies started before the first became live")
	assert.Greater(t, patches.Load(), int32(1), "writes of the catch-up's rounds")
	assert.Greater(t, during.Load(), uint64(20*maxQueue), "changes made during the copy")
	t.Logf("%d changes during the copy, caught up in %d writes", during.Load(), patches.Load())
}

// TestCatchUpAcrossALevelOpenedAgain: while a full copy catches up, its
// first sub-filter is retired and a new one opened at the same level, just
// after the copy took the chain's sub-filters. The blocks the round reads
// from the new one are read again once the copy has taken it, its level
// zeroed first, so the copy made live is exactly the file.
func TestCatchUpAcrossALevelOpenedAgain(t *testing.T) {
	s := redistest.StartServer(t)
	base := dial(t, s.URL(), false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, next := filledFilter(t, 20_000, 7, 15_000)
	var opened, reopened atomic.Bool
	patches := &atomic.Int32{}
	r := &countingStarts{Redis: patching{duringCopy{base, func(part string) {
		if strings.HasSuffix(part, ":l0:p5") && opened.CompareAndSwap(false, true) {
			// A second sub-filter, which the copy takes as its first
			// round begins, and more blocks than one round's read.
			addKeysInHook(t, f, &next, 6_000)
		}
	}, func() {
		sameAsFile(t, ctx, base, "reopened", f) // nothing changes after the reopening
	}}, patches, func() {
		inHook(t, func(t testingT) {
			dropOldest(t, f)
			addKeys(t, f, &next, 39_500)
			subs := f.Stats().SubFilters
			if assert.Len(t, subs, 2) && assert.Equal(t, 0, subs[1].Level) {
				reopened.Store(true)
			}
		})
	}}}
	m, err := Attach(f, r, "reopened", &Options{PartBytes: 4096, Backoff: 10 * time.Millisecond, holdBytes: 4096})
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Flush(ctx))
	require.True(t, reopened.Load(), "the level was opened again during the catch-up")
	requireSame(t, ctx, r, "reopened", f)
	assert.Equal(t, int32(1), r.n.Load(), "copies started")
	assert.Equal(t, uint64(1), m.Stats().Recopies)
}

// TestStatsShowACopy: while a full copy is written, Stats say so, how much
// of it is written, and how many blocks changed since wait to be read
// again.
func TestStatsShowACopy(t *testing.T) {
	s := redistest.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, next := filledFilter(t, 20_000, 31, 10_000)
	counters := f.Stats().CounterBytes
	var attached atomic.Pointer[Mirror]
	var during atomic.Pointer[Stats]
	r := duringCopy{dial(t, s.URL(), false), func(part string) {
		if !strings.HasSuffix(part, ":l0:p3") || during.Load() != nil {
			return
		}
		addKeysInHook(t, f, &next, 100)
		for attached.Load() == nil {
			runtime.Gosched() // Attach returns as the copy begins
		}
		st := attached.Load().Stats()
		during.Store(&st)
	}, func() {}}
	m, err := Attach(f, r, "progress", smallParts)
	require.NoError(t, err)
	attached.Store(m)
	defer m.Close()
	require.NoError(t, m.Flush(ctx))
	st := during.Load()
	require.NotNil(t, st)
	assert.True(t, st.Copying)
	assert.Equal(t, counters, st.CopyBytes)
	assert.Equal(t, 3*smallParts.PartBytes, st.CopiedBytes, "parts 0 to 2 written")
	assert.Positive(t, st.ChangedBlocks, "blocks the adds changed")
	after := m.Stats()
	assert.False(t, after.Copying)
	assert.Zero(t, after.CopyBytes+after.CopiedBytes+uint64(after.ChangedBlocks))
}

// TestChangesAsTheLastRoundBegins: changes committed after a copy's last
// round took the blocks it reads, and before it reads them, reach the copy
// from the queue. If the queue gave up on some, or one opened a
// sub-filter, the copy goes round again rather than start over.
func TestChangesAsTheLastRoundBegins(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		maxQueue int
		change   func(t testingT, f *engine.Filter, next *uint64)
	}{
		{"queued", 1000, func(t testingT, f *engine.Filter, next *uint64) {
			addKeys(t, f, next, 50)
		}},
		{"beyond the queue", 20, func(t testingT, f *engine.Filter, next *uint64) {
			addKeys(t, f, next, 50)
		}},
		{"a sub-filter opened", 100_000, func(t testingT, f *engine.Filter, next *uint64) {
			addKeys(t, f, next, 10_500)
			assert.Len(t, f.Stats().SubFilters, 2)
		}},
		{"a level retired and opened again", 100_000, func(t testingT, f *engine.Filter, next *uint64) {
			addKeys(t, f, next, 10_500) // a second sub-filter, at level 1
			for i := range uint64(20) {
				// Changes to the first before it is retired, in blocks
				// the new one at its level will mostly not touch.
				require.NoError(t, f.Remove(key(i+1), i+1))
			}
			dropOldest(t, f)
			addKeys(t, f, next, 39_600) // fills the second: a new one at level 0
			subs := f.Stats().SubFilters
			assert.Len(t, subs, 2)
			assert.Equal(t, 0, subs[1].Level)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := redistest.StartServer(t)
			r := &countingStarts{Redis: dial(t, s.URL(), false)}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			f, next := filledFilter(t, 20_000, 27, 10_000)
			m, err := Attach(f, r, "last", &Options{MaxQueue: c.maxQueue, PartBytes: 4096, Backoff: time.Millisecond})
			require.NoError(t, err)
			defer m.Close()
			require.NoError(t, m.Flush(ctx))

			var once sync.Once
			// On the shipper's goroutine, as a copy's last round begins.
			m.lastRound = func() { once.Do(func() { inHook(t, func(t testingT) { c.change(t, f, &next) }) }) }
			s.Restart() // Redis loses its copy: the next change finds out
			r.n.Store(0)
			addKeys(t, f, &next, 1)
			require.NoError(t, m.Flush(ctx)) // the copy, and the adds, are done
			require.NoError(t, m.Flush(ctx))
			requireSame(t, ctx, r, "last", f)
			assert.Equal(t, int32(1), r.n.Load(), "copies started")
			assert.Equal(t, uint64(2), m.Stats().Recopies)
		})
	}
}

// callHook is a client that calls hook before every call.
type callHook struct {
	Redis
	hook func(s *Script, keys []string)
}

func (c callHook) Eval(ctx context.Context, s *Script, readOnly bool, keys []string, args ...any) (any, error) {
	c.hook(s, keys)
	return c.Redis.Eval(ctx, s, readOnly, keys, args...)
}

// TestCopyWaitsOutAnOutage: Redis stops answering for a while as a full
// copy writes its parts, catches up or switches. The copy makes its call
// again until Redis answers, showing the failure in Stats meanwhile,
// instead of starting over once Redis is back.
func TestCopyWaitsOutAnOutage(t *testing.T) {
	t.Parallel()
	writing := func(s *Script, keys []string) bool { return s == writeScript && strings.HasSuffix(keys[0], ":p3") }
	catchingUp := func(s *Script, keys []string) bool { return s == shipScript && strings.HasSuffix(keys[0], ":pending") }
	switching := func(s *Script, keys []string) bool { return s == switchScript }
	for _, c := range []struct {
		phase    string
		at       func(s *Script, keys []string) bool
		maxQueue int
		adds     uint64 // as the outage begins
	}{
		{"writing", writing, 0, 0},
		{"catching up", catchingUp, 0, 0},
		{"switching", switching, 0, 0},
		// Changes the queue gives up on while the last writes or the
		// switch wait: the copy, not yet live, catches up again.
		{"catching up, beyond the queue", catchingUp, 20, 100},
		{"switching, beyond the queue", switching, 20, 100},
	} {
		t.Run(c.phase, func(t *testing.T) {
			s := redistest.StartServer(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			f, next := filledFilter(t, 20_000, 28, 10_000)
			var paused atomic.Bool
			back := make(chan struct{})
			r := &countingStarts{Redis: callHook{dial(t, s.URL(), false), func(sc *Script, keys []string) {
				if c.at(sc, keys) && paused.CompareAndSwap(false, true) {
					addKeysInHook(t, f, &next, c.adds)
					s.Pause()
					time.AfterFunc(600*time.Millisecond, func() { s.Resume(); close(back) })
				}
			}}}
			m, err := Attach(f, r, "outage", &Options{MaxQueue: c.maxQueue, PartBytes: 4096, Timeout: 50 * time.Millisecond, Backoff: 5 * time.Millisecond})
			require.NoError(t, err)
			defer m.Close()
			seen := ""
			for waiting := true; waiting; {
				select {
				case <-back:
					waiting = false
				case <-time.After(5 * time.Millisecond):
					if e := m.Stats().LastError; e != "" {
						seen = e
					}
				}
			}
			require.NoError(t, m.Flush(ctx))
			requireSame(t, ctx, r, "outage", f)
			assert.Equal(t, int32(1), r.n.Load(), "copies started")
			assert.Equal(t, uint64(1), m.Stats().Recopies)
			assert.NotEmpty(t, seen, "the failure shown during the outage")
			t.Logf("shown: %s", seen)
		})
	}
}

// TestLostCopyIsNoticedAtTheNextWrite: Redis loses the pending copy (a
// restart) while its parts are written. The next write finds out, and the
// copy deletes what it wrote and starts again, rather than writing the
// rest of a copy no longer there.
func TestLostCopyIsNoticedAtTheNextWrite(t *testing.T) {
	s := redistest.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, _ := filledFilter(t, 20_000, 29, 10_000)
	total := parts(f.Stats().SubFilters[0].Bytes, smallParts.PartBytes)
	require.Greater(t, total, uint64(10))
	var once, restarted atomic.Bool
	var mu sync.Mutex
	written := map[string]bool{} // parts written after the restart, before the next copy
	r := &countingStarts{Redis: callHook{dial(t, s.URL(), false), func(sc *Script, keys []string) {
		switch {
		case sc == writeScript && strings.HasSuffix(keys[0], ":p3") && once.CompareAndSwap(false, true):
			s.Restart()
			restarted.Store(true)
		case sc == writeScript && restarted.Load() && !strings.HasSuffix(keys[0], ":p3"):
			mu.Lock()
			written[keys[0]] = true
			mu.Unlock()
		case sc == startScript:
			restarted.Store(false)
		}
	}}}
	m, err := Attach(f, r, "lost", smallParts)
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Flush(ctx))
	requireSame(t, ctx, r, "lost", f)
	assert.Equal(t, int32(2), r.n.Load(), "copies started")
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, written, 0, "parts written after the restart, of %d", total)
}

// sameAsFile is requireSame for another goroutine than the test's: it
// reports a difference and goes on.
func sameAsFile(t *testing.T, ctx context.Context, r Redis, name string, f *engine.Filter) {
	local, err := f.Snapshot()
	if !assert.NoError(t, err) {
		return
	}
	remote, err := Pull(ctx, r, name)
	if !assert.NoError(t, err) {
		return
	}
	assert.Equal(t, local.MemSeq(), remote.MemSeq(), "sequence of the copy made live")
	assert.Equal(t, local.SubFilters(), remote.SubFilters(), "directory and tallies of the copy made live")
	for i := range min(len(local.SubFilters()), len(remote.SubFilters())) {
		assert.Equal(t, local.Counters(i), remote.Counters(i), "counters of sub-filter %d of the copy made live", i)
	}
}

// filledFilter is a new filter for capacity keys at 1%, with n added, and
// the id of the next key.
func filledFilter(t *testing.T, capacity, seed, n uint64) (*engine.Filter, uint64) {
	t.Helper()
	f := newFilter(t, engine.Config{Capacity: capacity, ErrorRate: 0.01, Seed: seed})
	next := uint64(1)
	addKeys(t, f, &next, n)
	return f, next
}

func addKeys(t testingT, f *engine.Filter, next *uint64, n uint64) {
	t.Helper()
	for range n {
		require.NoError(t, f.Add(key(*next), *next))
		*next++
	}
}

// addKeysInHook is addKeys for a client's hook (see inHook).
func addKeysInHook(t *testing.T, f *engine.Filter, next *uint64, n uint64) {
	inHook(t, func(t testingT) { addKeys(t, f, next, n) })
}

// testingT is what the helpers that a hook may call need of a test: a
// *testing.T on the test's goroutine, inHook's hookT on any other.
type testingT interface {
	require.TestingT
	Helper()
}

// inHook runs code that a hook runs on a goroutine not the test's: the
// mirror's shipper, or a reader's own (a Restore's). There t.FailNow must
// not be called: it would end that goroutine, not the test, and leave the
// test waiting for it until its context ran out. Through hookT a require
// in code reports its failure to the test and ends code alone.
func inHook(t *testing.T, code func(t testingT)) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(hookFailure); !ok {
				panic(r)
			}
		}
	}()
	code(hookT{t})
}

// hookT is inHook's testingT.
type hookT struct{ t *testing.T }

func (h hookT) Errorf(format string, args ...any) { h.t.Errorf(format, args...) }
func (h hookT) FailNow()                          { panic(hookFailure{}) }
func (h hookT) Helper()                           { h.t.Helper() }

// hookFailure is what hookT.FailNow ends inHook's code with.
type hookFailure struct{}

// dropOldest retires the oldest sub-filter.
func dropOldest(t testingT, f *engine.Filter) {
	t.Helper()
	dropped, err := f.DropBefore(f.Stats().SubFilters[1].FirstID)
	require.NoError(t, err)
	require.Equal(t, 1, dropped)
}

// TestCopyTakesAChunkOfMemory: a full copy into Redis reads the filter a
// chunk at a time instead of copying all of its counters into memory first,
// so a service mirroring a filter of many gigabytes does not need as much
// again to recopy it.
func TestCopyTakesAChunkOfMemory(t *testing.T) {
	s := redistest.StartServer(t)
	r := dial(t, s.URL(), false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := newFilter(t, engine.Config{Capacity: 4_000_000, ErrorRate: 0.01, Seed: 8})
	counters := f.Stats().CounterBytes
	require.Greater(t, counters, uint64(32<<20))

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := Attach(f, r, "large", nil)
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Flush(ctx))
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d bytes allocated to copy %d bytes of counters", allocated, counters)
	assert.Less(t, allocated, uint64(16<<20), "bytes allocated to copy %d bytes of counters", counters)
	requireSame(t, ctx, r, "large", f)
}

// slowWrites is a client whose writes of a copy's parts each take delay.
type slowWrites struct {
	Redis
	delay time.Duration
}

func (s slowWrites) Eval(ctx context.Context, sc *Script, readOnly bool, keys []string, args ...any) (any, error) {
	if sc == writeScript {
		time.Sleep(s.delay)
	}
	return s.Redis.Eval(ctx, sc, readOnly, keys, args...)
}

// TestTimeoutBoundsEachCall: Options.Timeout bounds each call to Redis, not
// a whole copy, so a copy of many parts, longer than the timeout in all,
// still becomes live.
func TestTimeoutBoundsEachCall(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	r := slowWrites{dial(t, s.URL(), false), 20 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f, _ := filledFilter(t, 20_000, 9, 1_000)
	opts := &Options{PartBytes: 4096, Timeout: 300 * time.Millisecond, Backoff: 10 * time.Millisecond}
	subs := f.Stats().SubFilters
	require.Greater(t, parts(subs[0].Bytes, opts.PartBytes), uint64(30), "the copy's writes take longer than the timeout in all")
	m, err := Attach(f, r, "slow", opts)
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Flush(ctx))
	requireSame(t, ctx, r, "slow", f)
	assert.Equal(t, uint64(1), m.Stats().Recopies)
}

// countingWrites counts a copy's writes of parts, and calls first after
// the first.
type countingWrites struct {
	slowWrites
	n     *atomic.Int32
	first func()
}

func (c countingWrites) Eval(ctx context.Context, s *Script, readOnly bool, keys []string, args ...any) (any, error) {
	answer, err := c.slowWrites.Eval(ctx, s, readOnly, keys, args...)
	if s == writeScript && c.n.Add(1) == 1 {
		c.first()
	}
	return answer, err
}

// TestCloseStopsACopy: Close does not wait for a full copy in progress to
// be written to the end.
func TestCloseStopsACopy(t *testing.T) {
	s := redistest.StartServer(t)
	f := newFilter(t, engine.Config{Capacity: 20_000, ErrorRate: 0.01, Seed: 10})
	opts := &Options{PartBytes: 4096}
	total := int32(parts(f.Stats().SubFilters[0].Bytes, opts.PartBytes))
	require.Greater(t, total, int32(30))
	writes := &atomic.Int32{}
	started := make(chan struct{})
	r := countingWrites{slowWrites{dial(t, s.URL(), false), 10 * time.Millisecond}, writes, func() { close(started) }}
	m, err := Attach(f, r, "closing", opts)
	require.NoError(t, err)
	<-started
	require.NoError(t, m.Close())
	assert.Less(t, writes.Load(), total, "parts written when Close returned, of %d", total)
	_, err = NewChecker(context.Background(), r, "closing")
	assert.ErrorIs(t, err, ErrNotMirrored, "the copy never became live")
}

// failingWrites is a client that fails the writes of a copy's parts that
// fail picks by their number, counting from 1, as a connection lost with
// its answer would.
type failingWrites struct {
	Redis
	n    *atomic.Int32
	fail func(n int32) bool
}

func (f failingWrites) Eval(ctx context.Context, s *Script, readOnly bool, keys []string, args ...any) (any, error) {
	if s == writeScript && f.fail(f.n.Add(1)) {
		return nil, errors.New("connection reset")
	}
	return f.Redis.Eval(ctx, s, readOnly, keys, args...)
}

// TestCopyOutlivesLostWrites: a copy writes a piece again when a call
// fails, instead of starting over, so a copy of many parts completes over
// a connection that drops an answer now and then.
func TestCopyOutlivesLostWrites(t *testing.T) {
	s := redistest.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := &countingStarts{Redis: failingWrites{dial(t, s.URL(), false), &atomic.Int32{}, func(n int32) bool { return n%5 == 0 }}}
	f, _ := filledFilter(t, 20_000, 14, 5_000)
	require.Greater(t, parts(f.Stats().SubFilters[0].Bytes, smallParts.PartBytes), uint64(10))
	m, err := Attach(f, r, "flaky", smallParts)
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Flush(ctx))
	assert.Equal(t, int32(1), r.n.Load(), "copies started")
	requireSame(t, ctx, r, "flaky", f)
}

// TestTwoCopiesAtOnce: a process pushes a copy of the same name while the
// mirror writes one (and stops before its switch), its claim on the name
// lost. The two copies never
// share parts: the mirror finds its copy replaced, deletes what it wrote
// and copies again, and Redis ends holding exactly the file and nothing
// left over.
func TestTwoCopiesAtOnce(t *testing.T) {
	t.Parallel()
	eachRedisRaw(t, testTwoCopiesAtOnce)
}

func testTwoCopiesAtOnce(t *testing.T, r Redis, raw redis.UniversalClient) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name = "twice"
	f, next := filledFilter(t, 20_000, 15, 10_000)
	other := atomic.Bool{}
	during := duringCopy{r, func(part string) {
		if strings.HasSuffix(part, ":l0:p3") && other.CompareAndSwap(false, true) {
			// Changes into parts the mirror copied already (fewer than a
			// batch: were the other copy's pending hash taken for the
			// mirror's own, its sequence would read as these applied),
			// then the other copy, written whole but never made live. The
			// mirror's claim on the name is gone first, as if it could
			// not reach Redis for the claim's time: else the other copy
			// would be refused at its start.
			inHook(t, func(t testingT) {
				addKeys(t, f, &next, 300)
				require.NoError(t, raw.Del(ctx, keys{name}.owner()).Err())
				assert.Error(t, push(ctx, f, failingSwitch{r}, name, smallParts))
			})
		}
	}, func() {}}
	m, err := Attach(f, during, name, smallParts)
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Flush(ctx))
	require.True(t, other.Load())
	requireSame(t, ctx, r, name, f)
	// The mirror's first copy, the other, and the mirror's second.
	assert.Equal(t, attachedKeys(f, name, 3, smallParts.PartBytes), keysLike(t, raw, "{"+name+"}*"))
}

// TestFlushEndsWithClose: a Flush waiting for a Redis that never answers
// returns ErrClosed when the mirror closes, and so does a Flush after it,
// instead of waiting for ever.
func TestFlushEndsWithClose(t *testing.T) {
	r, err := Dial("redis://127.0.0.1:1") // nothing listens there
	require.NoError(t, err)
	defer r.Close()
	f := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Seed: 16})
	m, err := Attach(f, r, "nowhere", &Options{Backoff: time.Millisecond})
	require.NoError(t, err)
	waiting := make(chan error)
	go func() { waiting <- m.Flush(context.Background()) }()
	require.NoError(t, f.Add(key(1), 1))
	require.NoError(t, m.Close())
	select {
	case err := <-waiting:
		assert.ErrorIs(t, err, ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("Flush still waits after Close")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	assert.ErrorIs(t, m.Flush(ctx), ErrClosed)
}

// TestFlushAfterCloseIsNotCancelled: the call Close cuts short is the
// mirror's own doing, not a failure. A Flush after Close says ErrClosed,
// and not that call's context.Canceled, which its caller would take for
// its own context's.
func TestFlushAfterCloseIsNotCancelled(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	calling := make(chan struct{})
	var once sync.Once
	r := callHook{dial(t, s.URL(), false), func(*Script, []string) { once.Do(func() { close(calling) }) }}
	f := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Seed: 21})
	require.NoError(t, f.Add(key(1), 1))
	s.Pause()
	defer s.Resume()
	m, err := Attach(f, r, "paused", &Options{Timeout: time.Minute})
	require.NoError(t, err)
	<-calling // the mirror's first call, which Redis will not answer
	require.NoError(t, m.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = m.Flush(ctx)
	assert.ErrorIs(t, err, ErrClosed)
	assert.NotErrorIs(t, err, context.Canceled)
	assert.NotContains(t, m.Stats().LastError, "canceled")
}

// peakHeap runs fn and reports by how much the heap in use grew above
// where it was, at most, sampled every millisecond.
func peakHeap(fn func()) uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	base := m.HeapAlloc
	peak := base
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	<-sampled
	return peak - base
}

// TestRestoreTakesAChunkOfMemory: Restore streams the copy from Redis into
// the new file, so a new machine fetching a filter of many gigabytes does
// not need as much in memory.
func TestRestoreTakesAChunkOfMemory(t *testing.T) {
	s := redistest.StartServer(t)
	r := dial(t, s.URL(), false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f, _ := filledFilter(t, 8_000_000, 17, 10_000)
	require.NoError(t, push(ctx, f, r, "fetched", nil))
	counters := f.Stats().CounterBytes
	require.Greater(t, counters, uint64(64<<20))

	defer debug.SetGCPercent(debug.SetGCPercent(20)) // garbage would hide the live heap
	var g *engine.Filter
	grown := peakHeap(func() {
		var err error
		g, err = Restore(ctx, r, "fetched", filepath.Join(t.TempDir(), "fetched.tb"), nil)
		require.NoError(t, err)
	})
	defer g.Close()
	t.Logf("the heap grew by at most %d bytes to restore %d bytes of counters", grown, counters)
	assert.Less(t, grown, counters/2)
	requireSame(t, ctx, r, "fetched", g)
}

// wholeReader reads a whole copy: Restore, into a file read back as a
// snapshot, or Pull.
type wholeReader struct {
	name string
	read func(context.Context, Redis) (*engine.Snapshot, error)
}

// wholeReaders are Restore and Pull of the copy named name.
func wholeReaders(t *testing.T, name string) []wholeReader {
	return []wholeReader{
		{"restore", func(ctx context.Context, r Redis) (*engine.Snapshot, error) {
			g, err := Restore(ctx, r, name, filepath.Join(t.TempDir(), name+".tb"), nil)
			if err != nil {
				return nil, err
			}
			defer g.Close()
			return g.Snapshot()
		}},
		{"pull", func(ctx context.Context, r Redis) (*engine.Snapshot, error) { return Pull(ctx, r, name) }},
	}
}

// TestReadersWhileACopyReplacesIt: a Restore or a Pull whose copy another
// full copy replaces between two of its reads starts again, and takes the
// new copy whole rather than failing or mixing the two.
func TestReadersWhileACopyReplacesIt(t *testing.T) {
	for i, reader := range wholeReaders(t, "moving") {
		t.Run(reader.name, func(t *testing.T) {
			s := redistest.StartServer(t)
			base := dial(t, s.URL(), false)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// Several reads: a read asks for at most readRanges parts.
			f := newFilter(t, engine.Config{Capacity: 400_000, ErrorRate: 0.01, Seed: 18 + uint64(i)})
			require.Greater(t, parts(f.Stats().CounterBytes, smallParts.PartBytes), uint64(2*readRanges))
			next := uint64(1)
			addKeys(t, f, &next, 5_000)
			require.NoError(t, push(ctx, f, base, "moving", smallParts))
			reads := atomic.Int32{}
			r := readsThen{base, &reads, 2, func() {
				addKeysInHook(t, f, &next, 5_000)
				assert.NoError(t, push(ctx, f, base, "moving", smallParts))
			}}
			remote, err := reader.read(ctx, r)
			require.NoError(t, err)
			assert.Greater(t, reads.Load(), int32(2))
			local, err := f.Snapshot()
			require.NoError(t, err)
			requireSameSnapshot(t, local, remote)
			requireSame(t, ctx, base, "moving", f)
		})
	}
}

// TestReadersOfOneSequenceWhileTheWriterShips: changes that a mirror ships
// while Pull or Restore reads the copy, in many calls, send the read back
// to the start, so that what it returns is the copy at one sequence, not
// counters of later changes under an earlier sequence and its tallies.
func TestReadersOfOneSequenceWhileTheWriterShips(t *testing.T) {
	t.Parallel()
	for i, reader := range wholeReaders(t, "shipping") {
		t.Run(reader.name, func(t *testing.T) {
			base := dial(t, redistest.StartServer(t).URL(), false)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			f, m, next := shipped(t, ctx, base, "shipping", engine.Config{Capacity: 400_000, ErrorRate: 0.01, Seed: 28 + uint64(i)}, smallParts, 5_000)
			require.Greater(t, parts(f.Stats().CounterBytes, smallParts.PartBytes), uint64(2*readRanges))
			reads := atomic.Int32{}
			r := readsThen{base, &reads, 2, func() {
				addKeysInHook(t, f, &next, 20_000)
				assert.NoError(t, m.Flush(ctx))
			}}
			remote, err := reader.read(ctx, r)
			require.NoError(t, err)
			local, err := f.Snapshot()
			require.NoError(t, err)
			requireSameSnapshot(t, local, remote)
		})
	}
}

// TestASmallCopyIsReadInOneCall: the counters of a copy that fit one read,
// though they lie in several sub-filters, are read in one call, so a writer
// that ships a change after every read of the copy cannot hold Pull or
// Restore off, as it would a copy read in several calls.
func TestASmallCopyIsReadInOneCall(t *testing.T) {
	for i, reader := range wholeReaders(t, "small") {
		t.Run(reader.name, func(t *testing.T) {
			base := dial(t, redistest.StartServer(t).URL(), false)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			f, m, next := shipped(t, ctx, base, "small", engine.Config{Capacity: 1000, ErrorRate: 0.01, Growth: 1, Seed: 38 + uint64(i)}, nil, 3_500)
			require.Len(t, f.Stats().SubFilters, 4)

			// After each read, what the read saw, then a change shipped.
			var seen *engine.Snapshot
			reads := 0
			r := afterCall{base, func(s *Script) {
				if s != readScript {
					return
				}
				reads++
				var err error
				seen, err = f.Snapshot()
				assert.NoError(t, err)
				addKeysInHook(t, f, &next, 1)
				assert.NoError(t, m.Flush(ctx))
			}}
			remote, err := reader.read(ctx, r)
			require.NoError(t, err)
			assert.Equal(t, 1, reads)
			requireSameSnapshot(t, seen, remote)
		})
	}
}

// afterCall is a client that calls then after each call it makes.
type afterCall struct {
	Redis
	then func(s *Script)
}

func (c afterCall) Eval(ctx context.Context, s *Script, readOnly bool, keys []string, args ...any) (any, error) {
	answer, err := c.Redis.Eval(ctx, s, readOnly, keys, args...)
	c.then(s)
	return answer, err
}

// readsThen is a client that calls then once, before read number at of a
// copy's counters.
type readsThen struct {
	Redis
	n    *atomic.Int32
	at   int32
	then func()
}

func (c readsThen) Eval(ctx context.Context, s *Script, readOnly bool, keys []string, args ...any) (any, error) {
	if s == readScript && c.n.Add(1) == c.at {
		c.then()
	}
	return c.Redis.Eval(ctx, s, readOnly, keys, args...)
}

// losesAnswers is a client that makes the first call of each of its
// scripts, then loses the answer, as a connection that drops after Redis
// ran the script. then, if not nil, runs after each loss, before the
// caller hears of it.
type losesAnswers struct {
	Redis
	mu   sync.Mutex
	lost map[*Script]bool
	then func()
}

func (l *losesAnswers) Eval(ctx context.Context, s *Script, readOnly bool, keys []string, args ...any) (any, error) {
	answer, err := l.Redis.Eval(ctx, s, readOnly, keys, args...)
	l.mu.Lock()
	lose, ok := l.lost[s]
	lose = ok && !lose && err == nil
	if lose {
		l.lost[s] = true
	}
	l.mu.Unlock()
	if !lose {
		return answer, err
	}
	if l.then != nil {
		l.then()
	}
	return nil, errors.New("connection reset after the call")
}

// TestCopyOutlivesLostAnswers: a full copy whose write, replay and switch
// each lose an answer once makes each again (they are safe to repeat, and
// a switch already made is recognised) instead of starting over.
func TestCopyOutlivesLostAnswers(t *testing.T) {
	s := redistest.StartServer(t)
	base := dial(t, s.URL(), false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f, next := filledFilter(t, 20_000, 19, 5_000)
	changed := atomic.Bool{}
	during := duringCopy{base, func(part string) {
		if strings.HasSuffix(part, ":l0:p3") && changed.CompareAndSwap(false, true) {
			addKeysInHook(t, f, &next, 100) // for the copy to replay
		}
	}, func() {}}
	lossy := &losesAnswers{Redis: during, lost: map[*Script]bool{writeScript: false, shipScript: false, switchScript: false}}
	r := &countingStarts{Redis: lossy}
	m, err := Attach(f, r, "lossy", smallParts)
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Flush(ctx))
	assert.Equal(t, map[*Script]bool{writeScript: true, shipScript: true, switchScript: true}, lossy.lost, "every answer was lost once")
	assert.Equal(t, int32(1), r.n.Load(), "copies started")
	assert.Equal(t, uint64(1), m.Stats().Recopies)
	requireSame(t, ctx, base, "lossy", f)
}

// stuckWrites is a client whose writes of a copy's parts never answer.
type stuckWrites struct{ Redis }

func (s stuckWrites) Eval(ctx context.Context, sc *Script, readOnly bool, keys []string, args ...any) (any, error) {
	if sc == writeScript {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Redis.Eval(ctx, sc, readOnly, keys, args...)
}

// TestPushTimesOutEachCall: Push bounds each call by Options.Timeout, as
// the mirror does, so a call Redis never answers ends it with an error even
// under a context without a deadline.
func TestPushTimesOutEachCall(t *testing.T) {
	s := redistest.StartServer(t)
	r := stuckWrites{dial(t, s.URL(), false)}
	f := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Seed: 20})
	pushed := make(chan error, 1)
	go func() {
		pushed <- push(context.Background(), f, r, "stuck", &Options{Timeout: 50 * time.Millisecond, Backoff: time.Millisecond})
	}()
	select {
	case err := <-pushed:
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(10 * time.Second):
		t.Fatal("Push still waits for a call Redis never answers")
	}
}

// TestCopyAfterTheGenerationCounterIsLost: Redis lost the key that hands
// out generations (evicted, or deleted by hand) and kept the live copy. A
// new copy still takes a generation above the live one: one that took the
// live copy's own would write over its parts while checks read them, and
// its switch would delete them.
func TestCopyAfterTheGenerationCounterIsLost(t *testing.T) {
	s := redistest.StartServer(t)
	r := dial(t, s.URL(), false)
	raw := redistest.Client(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, next := filledFilter(t, 5000, 35, 3000)
	require.NoError(t, push(ctx, f, r, "regen", smallParts))
	first, err := Describe(ctx, r, "regen")
	require.NoError(t, err)
	require.Equal(t, int64(1), raw.Del(ctx, keys{"regen"}.gens()).Val())

	addKeys(t, f, &next, 500)
	// Parts of the generation the new copy takes, left by a copy Redis
	// lost the pending hash of, and longer than the new copy's parts:
	// their first write replaces them, leaving nothing past its end.
	k, partBytes := keys{"regen"}, smallParts.PartBytes
	stale := map[string]int64{}
	for _, sub := range f.Stats().SubFilters {
		size := sub.Blocks * 64
		for p := range parts(size, partBytes) {
			key := k.part(first.Generation+1, sub.Level, p)
			stale[key] = int64(min(partBytes, size-p*partBytes))
			require.NoError(t, raw.Set(ctx, key, bytes.Repeat([]byte{0xff}, int(partBytes)+100), 0).Err())
		}
	}
	require.NoError(t, push(ctx, f, r, "regen", smallParts))
	second, err := Describe(ctx, r, "regen")
	require.NoError(t, err)
	require.Equal(t, first.Generation+1, second.Generation)
	requireSame(t, ctx, r, "regen", f)
	for key, length := range stale {
		assert.Equal(t, length, raw.StrLen(ctx, key).Val(), "%s holds its part and nothing more", key)
	}
	c, err := NewChecker(ctx, r, "regen")
	require.NoError(t, err)
	present, err := c.ContainsBatch(ctx, keysTo(next), nil)
	require.NoError(t, err)
	assert.NotContains(t, present[1:], false) // key(0) was never added
}

// TestSwitchNeedsThePendingCopysSequence: a switch makes the pending copy
// live only if it holds both the generation and the sequence the writer
// switches at. A pending copy of the right generation at another sequence
// is not the copy the writer caught up: the switch leaves Redis as it was
// and says the copy was replaced. Made again after its answer was lost, a
// switch finds the copy live and succeeds; at another sequence, it does
// not.
func TestSwitchNeedsThePendingCopysSequence(t *testing.T) {
	s := redistest.StartServer(t)
	r := dial(t, s.URL(), false)
	raw := redistest.Client(t, s)
	ctx := context.Background()
	st := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Seed: 21}).Stats()
	k, who := keys{"switch"}, newOwner(claimTTL)
	old := copyMeta{gen: 4, seq: 10, part: 4096, config: st.Config, subs: st.SubFilters}
	oldParts := k.copyParts(old)
	require.NotEmpty(t, oldParts)
	for _, p := range oldParts {
		require.NoError(t, raw.Set(ctx, p, "counters", 0).Err())
	}
	require.NoError(t, raw.HSet(ctx, k.meta(), metaFields(old.gen, old.seq, old.part, old.config, old.subs)...).Err())
	require.NoError(t, raw.HSet(ctx, k.pending(), metaFields(5, 12, old.part, old.config, old.subs)...).Err())
	liveIs := func(gen, seq uint64) {
		t.Helper()
		live, err := readMeta(ctx, r, k)
		require.NoError(t, err)
		assert.Equal(t, [2]uint64{gen, seq}, [2]uint64{live.gen, live.seq}, "the live copy's generation and sequence")
	}

	err := switchCopy(ctx, r, k, who, old, 5, 11, time.Minute)
	require.ErrorIs(t, err, errReplaced)
	liveIs(4, 10)
	assert.Equal(t, int64(1), raw.Exists(ctx, k.pending()).Val(), "the pending copy stays pending")
	assert.Equal(t, int64(len(oldParts)), raw.Exists(ctx, oldParts...).Val(), "the live copy's parts stay")

	require.NoError(t, switchCopy(ctx, r, k, who, old, 5, 12, time.Minute))
	liveIs(5, 12)
	assert.Zero(t, raw.Exists(ctx, k.pending()).Val(), "the pending hash became the meta hash")
	assert.Zero(t, raw.Exists(ctx, oldParts...).Val(), "the old copy's parts are deleted")

	require.NoError(t, switchCopy(ctx, r, k, who, old, 5, 12, time.Minute), "a switch made again")
	require.ErrorIs(t, switchCopy(ctx, r, k, who, old, 5, 11, time.Minute), errReplaced, "a switch at another sequence")
	liveIs(5, 12)
}

// TestLongerBatchAfterALostAnswer: a batch's answer is lost, and changes
// made meanwhile join it when it is shipped again. Redis, which applied the
// first, answers with its sequence, and the mirror ships only the rest,
// without a full copy.
func TestLongerBatchAfterALostAnswer(t *testing.T) {
	s := redistest.StartServer(t)
	base := dial(t, s.URL(), false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f, next := filledFilter(t, 20_000, 35, 1_000)
	// The changes made as the answer is lost, from the mirror's goroutine,
	// which may ship the test's first adds before the test has made them
	// all: so their keys are their own.
	meanwhile := uint64(1_000_000)
	lossy := &losesAnswers{Redis: base, lost: map[*Script]bool{}, then: func() {
		for range 10 {
			if err := f.Add(key(meanwhile), meanwhile); err != nil {
				t.Error(err)
			}
			meanwhile++
		}
	}}
	m, err := Attach(f, lossy, "longer", smallParts)
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Flush(ctx))
	before := m.Stats()
	lossy.mu.Lock()
	lossy.lost[shipScript] = false // from the next batch on
	lossy.mu.Unlock()

	addKeys(t, f, &next, 5)
	require.NoError(t, m.Flush(ctx))
	require.NoError(t, m.Flush(ctx)) // and the changes made as the answer was lost
	require.True(t, lossy.lost[shipScript], "a ship's answer was lost")
	after := m.Stats()
	assert.Equal(t, before.Recopies, after.Recopies, "no full copy")
	assert.Equal(t, before.Resends+1, after.Resends, "the longer batch found its first part applied")
	assert.Equal(t, f.Stats().MemSeq, after.Acked)
	requireSame(t, ctx, base, "longer", f)
}

// TestPushMakesAFailedCallAgain: Push makes a call that failed in a way
// another try may mend again, callRetries times, then gives up with the
// failure.
func TestPushMakesAFailedCallAgain(t *testing.T) {
	s := redistest.StartServer(t)
	base := dial(t, s.URL(), false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f, _ := filledFilter(t, 1000, 36, 100)
	opts := &Options{Backoff: time.Millisecond}
	for _, failures := range []int32{callRetries, callRetries + 1} {
		r := failingWrites{base, &atomic.Int32{}, func(n int32) bool { return n <= failures }}
		_, err := Push(ctx, f, r, "again", opts)
		if failures <= callRetries {
			require.NoError(t, err, "%d failed calls", failures)
			requireSame(t, ctx, base, "again", f)
		} else {
			require.ErrorContains(t, err, "connection reset", "%d failed calls", failures)
		}
		assert.Equal(t, int32(callRetries+1), r.n.Load(), "calls with %d failing", failures)
	}
}

// Both sources a full copy is written from hand out whole blocks of a
// sub-filter and refuse a read that runs past its end, rather than fill
// part of it.
func TestCopySourcesRefuseReadsPastTheEnd(t *testing.T) {
	f, _ := filledFilter(t, 2000, 3, 500)
	snap, err := f.Snapshot()
	require.NoError(t, err)
	want := snap.Counters(0)
	size := uint64(len(want))
	require.Positive(t, size)
	for name, src := range map[string]copySource{
		"snapshot": snapshotSource(snap),
		"live":     liveSource(f, f.Stats()),
	} {
		t.Run(name, func(t *testing.T) {
			whole := make([]byte, size)
			require.NoError(t, src.read(0, 0, whole))
			assert.Equal(t, want, whole)
			last := make([]byte, 64)
			require.NoError(t, src.read(0, size-64, last))
			assert.Equal(t, want[size-64:], last)

			assert.ErrorIs(t, src.read(0, size-64, make([]byte, 128)), engine.ErrInvalidInput, "a read that runs past the end")
			assert.ErrorIs(t, src.read(0, size+64, make([]byte, 64)), engine.ErrInvalidInput, "a read that begins past the end")
		})
	}
}
