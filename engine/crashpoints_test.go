//go:build invariants

package engine

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// crashed is what a crash hook panics with.
type crashed struct{ site crashSite }

// crashOp is an operation as one or more changes: run makes the call a user
// makes; change(i) makes its change i alone, so that a reference filter can
// be brought to any prefix of the operation.
type crashOp struct {
	name    string
	changes int
	run     func(f *Filter) error
	change  func(f *Filter, i int) error
}

// single is an operation of one change.
func single(name string, run func(f *Filter) error) crashOp {
	return crashOp{name: name, changes: 1, run: run, change: func(f *Filter, _ int) error { return run(f) }}
}

// TestEveryCrashPointRecovers stops every kind of operation at every crash
// point of each of its changes, as a kill would, and checks that Open
// recovers exactly: the file then holds, byte for byte in its counters and
// in every tally and directory entry, what running the changes that
// committed gives on an untouched copy. Two more changes that write no
// directory follow on both, then a reopen, and the two must still agree:
// what the stopped change left behind must stay dead.
func TestEveryCrashPointRecovers(t *testing.T) {
	// Sub-filters of 50 keys are flat (a key's counters spread over the
	// region, undo spans of one word, no presence bits); of 400, blocked.
	for _, capacity := range []uint64{50, 400} {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) { testEveryCrashPoint(t, capacity) })
	}
}

func testEveryCrashPoint(t *testing.T, c uint64) {
	basePath := tempPath(t)
	f, err := Create(basePath, Config{Capacity: c, ErrorRate: 0.01, Growth: 1, Seed: 3}, bootOf(1))
	require.NoError(t, err)
	for i := range 3 * c { // three full sub-filters
		require.NoError(t, f.Add(key(i), i))
	}
	subs := f.chain.SubFilters()
	require.Len(t, subs, 3)
	require.Equal(t, c == 50, subs[0].Geometry.Flat)
	require.NoError(t, f.Close())
	base := readFile(t, basePath)

	batchKeys := [][]byte{key(10_002), key(10_003), key(10_004)}
	batchIDs := []uint64{3 * c, 3*c + 1, 3*c + 2}
	ops := []crashOp{
		single("add with an old id", func(f *Filter) error { return f.Add(key(10_000), 10) }),
		single("add that opens a sub-filter", func(f *Filter) error { return f.Add(key(10_001), 3*c) }),
		single("remove", func(f *Filter) error { return f.Remove(key(5), 5) }),
		single("test-and-add", func(f *Filter) error {
			present, err := f.TestAndAdd(key(10_005), 3*c)
			require.False(t, present)
			return err
		}),
		single("drop-before", func(f *Filter) error {
			n, err := f.DropBefore(2 * c)
			require.Equal(t, 2, n)
			return err
		}),
		{
			name: "add-batch that opens a sub-filter", changes: len(batchKeys),
			run:    func(f *Filter) error { return f.AddBatch(batchKeys, batchIDs) },
			change: func(f *Filter, i int) error { return f.Add(batchKeys[i], batchIDs[i]) },
		},
	}
	// Changes that write no directory, into the sub-filter every operation
	// keeps.
	more := func(f *Filter) error {
		return errors.Join(f.Remove(key(2*c+20), 2*c+20), f.Add(key(20_000), 2*c+25))
	}
	sites := map[crashSite]string{siteDirectoryWritten: "directory written", siteSealed: "sealed", siteWritten: "written", siteAnnounced: "announced", siteCommitted: "committed"}
	cases := 0
	for _, op := range ops {
		for site, siteName := range sites {
			// Stop at the site's first occurrence, then its second, and
			// so on, until the operation runs to its end.
			for n := 1; ; n++ {
				name := fmt.Sprintf("%s, %s #%d", op.name, siteName, n)
				if !stopAndRecover(t, name, base, op, more, site, n) {
					break
				}
				cases++
			}
		}
	}
	t.Logf("%d crash points", cases)
	require.Positive(t, cases)
}

// TestReaderSeesWhatADeadWriterCommitted stops an add that opens a
// sub-filter just before and just after its commit, as a kill there
// would, with a reader open on the file. The reader must hold the key if
// the add committed and not otherwise, must not look for the directory
// again at every lookup while no writer runs, and must follow the next
// writer: its Open, and a sub-filter it opens.
func TestReaderSeesWhatADeadWriterCommitted(t *testing.T) {
	for _, c := range []struct {
		name      string
		site      crashSite
		committed bool
	}{{"announced", siteAnnounced, false}, {"committed", siteCommitted, true}} {
		t.Run(c.name, func(t *testing.T) {
			path := tempPath(t)
			f, err := Create(path, Config{Capacity: 400, ErrorRate: 0.01, Growth: 1, Seed: 3}, bootOf(1))
			require.NoError(t, err)
			for i := range uint64(400) {
				require.NoError(t, f.Add(key(i), i))
			}
			readOnly := bootOf(1)
			readOnly.ReadOnly = true
			r, err := Open(path, readOnly)
			require.NoError(t, err)
			t.Cleanup(func() { r.Close() })
			added, later := key(1_000_000), key(1_000_001)
			require.False(t, r.Contains(added))
			require.False(t, r.Contains(later))

			f.crash.at = func(s crashSite) {
				if s == c.site {
					panic(crashed{s})
				}
			}
			require.PanicsWithValue(t, crashed{c.site}, func() { _ = f.Add(added, 400) })
			abandon(t, f)

			require.Equal(t, c.committed, r.Contains(added), "the reader after the writer died")
			reloads := r.reloads.Load()
			for range 100 {
				require.Equal(t, c.committed, r.Contains(added))
			}
			require.Equal(t, reloads, r.reloads.Load(), "lookups while no writer runs look for the directory again")

			g, err := Open(path, bootOf(1))
			require.NoError(t, err)
			t.Cleanup(func() { g.Close() })
			require.Equal(t, c.committed, g.Contains(added))
			require.Equal(t, c.committed, r.Contains(added), "the reader after the next writer's Open")
			require.Len(t, r.Stats().SubFilters, len(g.Stats().SubFilters))

			// A key with a newer id than any: if the stopped add opened no
			// sub-filter, this one does.
			require.NoError(t, g.Add(later, 500))
			require.True(t, r.Contains(later), "the reader after the next writer's add")
			require.Len(t, r.Stats().SubFilters, 2)
		})
	}
}

// stopAndRecover runs op on a copy of base, stopped at the n-th time it
// reaches site, reopens the copy, and compares it with a reference brought
// to the same committed changes; then runs more on both, reopens both and
// compares them again. It reports false if op never reached site n times.
func stopAndRecover(t *testing.T, name string, base []byte, op crashOp, more func(*Filter) error, site crashSite, n int) bool {
	t.Helper()
	path := tempPath(t)
	require.NoError(t, os.WriteFile(path, base, 0o644))
	f, err := Open(path, bootOf(1))
	require.NoError(t, err, name)
	baseSeq := f.Stats().MemSeq
	reached := 0
	f.crash.at = func(s crashSite) {
		if s == site {
			if reached++; reached == n {
				panic(crashed{s})
			}
		}
	}
	stopped := func() (stopped bool) {
		defer func() {
			if r := recover(); r != nil {
				_, stopped = r.(crashed)
				require.True(t, stopped, "%s: %v", name, r)
			}
		}()
		require.NoError(t, op.run(f), name)
		return false
	}()
	if !stopped {
		require.NoError(t, f.Close())
		return false
	}
	abandon(t, f)

	got, err := Open(path, bootOf(1))
	require.NoError(t, err, "%s: open after the stop", name)
	committed := int(got.Stats().MemSeq - baseSeq)
	require.LessOrEqual(t, committed, op.changes, name)
	if site == siteCommitted {
		require.Equal(t, n, committed, "%s: the change that committed stays", name)
	} else {
		require.Equal(t, n-1, committed, "%s: the stopped change is undone", name)
	}

	refPath := tempPath(t)
	require.NoError(t, os.WriteFile(refPath, base, 0o644))
	want, err := Open(refPath, bootOf(1))
	require.NoError(t, err)
	for i := range committed {
		require.NoError(t, op.change(want, i), name)
	}
	requireSameFilter(t, name+", after recovery", got, want)

	require.NoError(t, more(got), name)
	require.NoError(t, more(want), name)
	got, want = reopen(t, got, bootOf(1)), reopen(t, want, bootOf(1))
	requireSameFilter(t, name+", after more changes and a reopen", got, want)
	require.NoError(t, got.Close())
	require.NoError(t, want.Close())
	return true
}

// requireSameFilter checks that got holds what want does: sequence,
// directory, tallies and counters, and that got verifies.
func requireSameFilter(t *testing.T, name string, got, want *Filter) {
	t.Helper()
	gs, err := got.Snapshot()
	require.NoError(t, err)
	ws, err := want.Snapshot()
	require.NoError(t, err)
	require.Equal(t, ws.MemSeq(), gs.MemSeq(), "%s: sequence", name)
	require.Equal(t, ws.SubFilters(), gs.SubFilters(), "%s: directory and tallies", name)
	for i := range ws.SubFilters() {
		require.Equal(t, ws.Counters(i), gs.Counters(i), "%s: counters of sub-filter %d", name, i)
	}
	require.Empty(t, got.verify(), name)
}
