package engine

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flushedSoon waits until every change f committed is on disk, as
// Options.FlushWhenIdle promises once f is left alone.
func flushedSoon(t *testing.T, f *Filter) {
	t.Helper()
	require.Eventually(t, func() bool {
		s := f.Stats()
		return s.DiskSeq == s.MemSeq
	}, 20*time.Second, time.Millisecond, "an idle filter is flushed")
}

// A writer left idle with Options.FlushWhenIdle flushes itself, so that a
// machine crash then finds it clean; without it the same crash gives
// ErrUnclean. Both a created and an opened filter do.
func TestFlushWhenIdleLeavesAnIdleFilterClean(t *testing.T) {
	idle := func(boot byte) *Options {
		opts := bootOf(boot)
		opts.FlushWhenIdle = 5 * time.Millisecond
		return opts
	}
	path := tempPath(t)
	f, err := Create(path, Config{Capacity: 1000, ErrorRate: 0.01}, idle(1))
	require.NoError(t, err)
	for i := range uint64(100) {
		require.NoError(t, f.Add(key(i), i))
	}
	flushedSoon(t, f)
	assert.NoError(t, f.Stats().FlushError)
	abandon(t, f)

	g, err := Open(path, idle(2)) // another boot: the machine crashed
	require.NoError(t, err, "idle at the crash: clean")
	for i := range uint64(100) {
		require.True(t, g.Contains(key(i)))
	}
	require.NoError(t, g.Add(key(100), 100))
	flushedSoon(t, g)
	abandon(t, g)

	h, err := Open(path, bootOf(3))
	require.NoError(t, err, "an opened filter flushes when idle too")
	assert.True(t, h.Contains(key(100)))
	require.NoError(t, h.Add(key(101), 101))
	time.Sleep(50 * time.Millisecond) // ten of the periods above
	assert.Zero(t, h.Stats().DiskSeq, "without the option nothing flushes")
	abandon(t, h)
	_, err = Open(path, bootOf(4))
	assert.ErrorIs(t, err, ErrUnclean)
}

// A look flushes only when no change was committed for a whole period:
// changes that keep coming are not made to wait for syncs, nor is a change
// followed at once by a second look (a tick that waited for the mutex while
// a change ran, and the tick queued meanwhile).
func TestFlushWhenIdleWaitsForAQuietPeriod(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 1000, ErrorRate: 0.01})
	start := time.Unix(1_800_000_000, 0)
	at := func(d time.Duration) func() time.Time { return func() time.Time { return start.Add(d) } }
	watch := &idleWatch{every: time.Second, seen: f.journal.MemSeq(), since: start}
	flushed := func() bool { s := f.Stats(); return s.DiskSeq == s.MemSeq }

	require.NoError(t, f.Add(key(1), 1))
	f.flushIfIdle(watch, at(2*time.Second))
	assert.False(t, flushed(), "a change since the last look")
	require.NoError(t, f.Add(key(2), 2))
	f.flushIfIdle(watch, at(3*time.Second))
	assert.False(t, flushed(), "another")
	f.flushIfIdle(watch, at(3*time.Second+time.Millisecond))
	assert.False(t, flushed(), "no change since, but only for a moment")
	f.flushIfIdle(watch, at(4*time.Second-time.Millisecond))
	assert.False(t, flushed())
	f.flushIfIdle(watch, at(4*time.Second))
	assert.True(t, flushed(), "a whole period without a change")
}

// Close ends the goroutine that looks, and a reader starts none.
func TestFlushWhenIdleStopsAtClose(t *testing.T) {
	path := tempPath(t)
	f, err := Create(path, Config{Capacity: 1000, ErrorRate: 0.01}, &Options{FlushWhenIdle: time.Millisecond})
	require.NoError(t, err)
	require.NotNil(t, f.idleStop)
	stop := f.idleStop
	require.NoError(t, f.Close())
	select {
	case <-stop:
	default:
		t.Fatal("Close leaves the look running")
	}
	r, err := Open(path, &Options{ReadOnly: true, FlushWhenIdle: time.Millisecond})
	require.NoError(t, err)
	assert.Nil(t, r.idleStop, "a reader has nothing to flush")
	require.NoError(t, r.Close())
}

// A writer dropped without Close keeps its file and its writer lock for the
// life of the process, collected or not, and with Options.FlushWhenIdle
// goes on flushing itself once idle: what Close's documentation says.
func TestADroppedWriterKeepsItsFile(t *testing.T) {
	// The dropped writer keeps the file open until the process ends, and
	// Windows removes no open file: the directory goes where it can.
	dir, err := os.MkdirTemp("", "dropped")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "filter.tb")
	added := func() uint64 {
		f, err := Create(path, Config{Capacity: 1000, ErrorRate: 0.01}, &Options{FlushWhenIdle: 5 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, f.Add(key(1), 1))
		return f.Stats().MemSeq
	}()
	r, err := Open(path, &Options{ReadOnly: true})
	require.NoError(t, err)
	defer r.Close()
	require.Eventually(t, func() bool {
		runtime.GC()
		s := r.Stats()
		return s.MemSeq == added && s.DiskSeq == added
	}, 20*time.Second, 5*time.Millisecond, "a dropped writer still flushes when idle")
	for range 5 {
		runtime.GC()
	}
	_, err = Open(path, nil)
	assert.ErrorIs(t, err, ErrLocked, "a dropped writer keeps its lock")
	assert.True(t, r.Contains(key(1)))
}
