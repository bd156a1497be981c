package engine

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/tallybloom/tallybloom/counting"
	"github.com/tallybloom/tallybloom/mmapfile"
	"github.com/tallybloom/tallybloom/scaling"
	"github.com/tallybloom/tallybloom/seqno"
)

// A change runs with f.mu held: beginLocked, the chain's operation (which
// saves and seals its undo record through store.Touch before it writes),
// then commitLocked, or abortLocked if the operation refused.

// crashSite is a point of a change where a test built with invariant
// checks may stop it, as a kill would, to see that the next Open recovers
// exactly (see crashPoint).
type crashSite int

const (
	siteDirectoryWritten crashSite = iota // a directory slot is written, nothing committed
	siteSealed                            // the undo record is sealed, counters not yet written
	siteWritten                           // every write is done, not yet committed
	siteAnnounced                         // the new directory is announced to readers, not yet committed
	siteCommitted                         // committed; retired room not yet given back
)

// beginLocked checks that a change may run and, before the first change
// after a flush, marks the file dirty on disk. Once that mark is synced no
// change can reach the disk without it, so a machine crash is always seen.
// A change that then writes nothing takes the mark back (abortLocked).
func (f *Filter) beginLocked() error {
	if err := f.changeableLocked(); err != nil || f.mu.dirty {
		return err
	}
	f.state.Store(seqno.State{Dirty: true, DurableSeq: f.mu.durableSeq, Boot: f.boot})
	if err := f.header.Sync(); err != nil {
		return err
	}
	f.mu.dirty, f.mu.change.marked = true, true
	f.mu.marks++
	return nil
}

// unmarkLocked puts back the clean state that the change in flight's
// beginLocked replaced, for a change that wrote nothing the file refers to:
// Flush promises that a file nothing changed after opens clean after a
// machine crash. If the sync fails the disk may hold either state, so the
// page keeps the dirty mark and the next change syncs it again.
func (f *Filter) unmarkLocked() {
	f.state.Store(seqno.State{DurableSeq: f.mu.durableSeq})
	if err := f.header.Sync(); err != nil {
		f.state.Store(seqno.State{Dirty: true, DurableSeq: f.mu.durableSeq, Boot: f.boot})
	}
	f.mu.dirty = false
}

// changeableLocked says why the filter cannot be changed, if it cannot.
func (f *Filter) changeableLocked() error {
	switch {
	case f.closed.Load():
		return ErrClosed
	case f.readOnly:
		return ErrReadOnly
	}
	return nil
}

// commitLocked makes the change in flight the last committed one, then gives
// back the room of the sub-filters it retired. What a plain add or remove
// does not do (a new directory, retired room) is kept out of line, so that
// their commit stays short.
func (f *Filter) commitLocked() error {
	c := &f.mu.change
	// Checked before the commit, a change that breaks them panics with its
	// undo record sealed, and the next Open takes it back. (In the crash
	// test's builds with the checks on, most of a change's time is then
	// inside it, where a kill exercises recovery.)
	checkInvariants(f)
	crashPoint(f, siteWritten)
	if !f.unjournaled && !c.sealed {
		f.journal.Begin()
		f.journal.Seal()
		crashPoint(f, siteSealed)
	}
	var gen uint64
	if c.published {
		gen = f.announceLocked()
	}
	if !f.unjournaled {
		f.journal.Commit()
	}
	crashPoint(f, siteCommitted)
	if c.published {
		f.mu.liveSlot = 1 - f.mu.liveSlot
		f.seenDirSeq.Store(gen)
		if f.populateNew {
			for _, sp := range c.allocated {
				f.populating.Add(1)
				go f.populateInBackground(sp.region)
			}
		}
	}
	if len(f.mu.feed) == 0 && len(c.dropped) == 0 {
		// A plain change: nothing is left that can fail or call out, and
		// the reset needs no defer, which took 2% of an add's
		// instructions. (A check or crash point that stops the change
		// above leaves it to a filter that is abandoned.)
		c.reset()
		return nil
	}
	defer c.reset()
	if len(f.mu.feed) > 0 {
		f.publishLocked(c)
	}
	if len(c.dropped) == 0 {
		return nil
	}
	return f.giveBackLocked(c.dropped)
}

// announceLocked tells readers in other processes of the directory the
// change in flight wrote, and returns its generation: the change's
// sequence. Readers watch the directory sequence. It is announced before
// the commit, so that a process that dies between the two never leaves
// readers blind to a directory it committed: a reader that looks before the
// commit finds the directory not yet live and waits for the memory sequence
// to move (see current), and the next writer's Open takes back an
// announcement whose change never committed.
func (f *Filter) announceLocked() uint64 {
	gen := f.journal.MemSeq() + 1
	atomic.StoreUint64(f.dirSeq, gen)
	crashPoint(f, siteAnnounced)
	return gen
}

// giveBackLocked gives back the room of sub-filters a committed change
// retired, and unmaps it once no reader can reach it.
func (f *Filter) giveBackLocked(dropped []*scaling.SubFilter) error {
	// A sub-filter retired while it is still being populated would have
	// pages of its room brought back, and written back, after the room is
	// released: wait for the populates first (seldom: only a sub-filter
	// opened moments ago can still be populating).
	f.populating.Wait()
	var errs []error
	for _, sub := range dropped {
		sp := spaceOf(sub)
		if err := f.file.Release(int64(sp.offset), int64(sp.size)); err != nil {
			errs = append(errs, err)
		}
		f.unmapLaterLocked(sub)
	}
	return errors.Join(errs...)
}

// abortLocked ends a change that wrote nothing, unmapping room it took. Such
// a change may have grown the file or released room no sub-filter holds,
// but wrote nothing the directory refers to, so if it marked the file
// dirty the mark is taken back.
func (f *Filter) abortLocked() {
	for _, sp := range f.mu.change.allocated {
		_ = sp.region.Unmap()
	}
	marked := f.mu.change.marked
	f.mu.change.reset()
	if marked {
		f.unmarkLocked()
	}
}

// endLocked commits the change if op succeeded and translates the chain's
// errors into the engine's sentinels.
func (f *Filter) endLocked(err error) error {
	if err == nil {
		return f.commitLocked()
	}
	f.abortLocked()
	return f.changeError(err)
}

// changeError translates an error of the chain's into the engine's sentinels.
func (f *Filter) changeError(err error) error {
	switch {
	case errors.Is(err, scaling.ErrNotFound):
		return ErrNotFound
	case errors.Is(err, scaling.ErrIDRetired):
		return ErrIDRetired
	case errors.Is(err, scaling.ErrChainFull):
		return fmt.Errorf("%w: %s holds all %d sub-filters a chain can; retire old ones with DropBefore", ErrChainFull, f.path, MaxSubFilters)
	case errors.Is(err, counting.ErrTooLarge):
		return fmt.Errorf("%w: %s: %w", ErrChainFull, f.path, err)
	}
	return err
}

// errRemoveRetired is both ErrNotFound (nothing changed; the key is not held)
// and ErrIDRetired (because its sub-filter is gone).
var errRemoveRetired = fmt.Errorf("%w: %w", ErrNotFound, ErrIDRetired)

// Add adds key with id, an id that grows over time (an insertion timestamp,
// a sequence number). The key goes to the sub-filter that owns id; a remove
// must give the same id. Add does not allocate.
func (f *Filter) Add(key []byte, id uint64) error { return f.add(f.hasher.Key(key), id) }

// AddString is Add for a string key, without converting it.
func (f *Filter) AddString(key string, id uint64) error { return f.add(f.hasher.String(key), id) }

func (f *Filter) add(h counting.Hash, id uint64) error {
	// The block is asked for before the lock, so that its cache miss runs
	// while the add waits for the lock and locates the key's counters. In
	// the cache the request costs an add about 5 ns; out of it, it saves
	// more (see bench/RESULTS.md). Remove and TestAndAdd do the same.
	f.chain.PrefetchChange(h, id)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addLocked(h, id)
}

func (f *Filter) addLocked(h counting.Hash, id uint64) error {
	if err := f.beginLocked(); err != nil {
		return err
	}
	return f.endLocked(f.chain.Add(h, id))
}

// Remove removes key, added with id. If the sub-filter that owns id does not
// hold the key, it returns ErrNotFound and changes nothing.
//
// Removing a key that was never added is unsafe in any counting Bloom filter:
// if the key is a false positive, its counters belong to other keys, and
// decrementing them can make those keys disappear. Remove only keys you added.
func (f *Filter) Remove(key []byte, id uint64) error { return f.remove(f.hasher.Key(key), id) }

// RemoveString is Remove for a string key, without converting it.
func (f *Filter) RemoveString(key string, id uint64) error {
	return f.remove(f.hasher.String(key), id)
}

func (f *Filter) remove(h counting.Hash, id uint64) error {
	// As in add: a remove reads the block and its presence bits, and
	// asked for before the lock they took a sixth off a remove at 1M keys
	// and a tenth at 64M (bench/, seven interleaved runs).
	f.chain.PrefetchChange(h, id)
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.removeLocked(h, id)
	if err == ErrIDRetired {
		return errRemoveRetired
	}
	return err
}

// removeLocked removes the key. A remove that finds nothing changes nothing,
// so before the first change after a flush it is refused without marking
// the file dirty; after it, the chain's remove refuses it as cheaply, and
// beginLocked alone checks that the filter may change.
func (f *Filter) removeLocked(h counting.Hash, id uint64) error {
	if !f.mu.dirty {
		if err := f.changeableLocked(); err != nil {
			return err
		}
		if err := f.chain.Holds(h, id); err != nil {
			return f.changeError(err)
		}
	}
	if err := f.beginLocked(); err != nil {
		return err
	}
	return f.endLocked(f.chain.Remove(h, id))
}

// TestAndAdd reports whether key was probably present and adds it with id if
// it was not, as one atomic step.
func (f *Filter) TestAndAdd(key []byte, id uint64) (bool, error) {
	return f.testAndAdd(f.hasher.Key(key), id)
}

// TestAndAddString is TestAndAdd for a string key, without converting it.
func (f *Filter) TestAndAddString(key string, id uint64) (bool, error) {
	return f.testAndAdd(f.hasher.String(key), id)
}

func (f *Filter) testAndAdd(h counting.Hash, id uint64) (bool, error) {
	// As in add, the block and its presence bits are asked for before the
	// lock: a key not held then finds its block on the way while its
	// presence bits are read. In bench/ (five interleaved runs, medians)
	// that took a TestAndAdd of a new key from 374 to 295 ns at 1M keys
	// and from 632 to 399 at 64M, and cost one of a key already held 20 ns
	// at 1M (60 to 80) and nothing at 64M.
	f.chain.PrefetchChange(h, id)
	f.mu.Lock()
	defer f.mu.Unlock()
	// A key found present changes nothing, and leaves a clean file clean.
	if err := f.changeableLocked(); err != nil {
		return false, err
	}
	if f.chain.Contains(h) {
		return true, nil
	}
	return false, f.addLocked(h, id)
}

// AddBatch adds keys[i] with ids[i] for every i, taking the lock once. Each
// key is its own change: if one fails, the keys before it stay added and the
// error is a *BatchError naming the failing index. A batch refused whole
// (keys and ids of different lengths, a closed or read-only filter) gets
// the sentinel error itself, and nothing is added.
func (f *Filter) AddBatch(keys [][]byte, ids []uint64) error {
	return f.changeBatch("add", keys, ids, func(i int, h counting.Hash) error {
		return f.addLocked(h, ids[i])
	})
}

// RemoveBatch removes keys[i], added with ids[i], for every i, taking the
// lock once, and appends to removed[:0] whether each key was removed; pass
// the previous result to reuse its room. A key its sub-filter does not hold
// (Remove's ErrNotFound) is reported false, changes nothing, and the batch
// goes on. Any other failure stops the batch as in AddBatch: the keys before
// it stay removed, the result covers them, and the error is a *BatchError.
// A batch refused whole gets the sentinel error and an empty result.
//
// As with Remove, remove only keys you added.
func (f *Filter) RemoveBatch(keys [][]byte, ids []uint64, removed []bool) ([]bool, error) {
	removed = removed[:0]
	err := f.changeBatch("remove", keys, ids, func(i int, h counting.Hash) error {
		err := f.removeLocked(h, ids[i])
		if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrIDRetired) {
			removed = append(removed, err == nil)
			return nil
		}
		return err
	})
	return removed, err
}

// changeBatch runs change, op's change of one key, over a batch: a group at a
// time, as ContainsBatch does, so that the keys' misses, then the blocks',
// are under way together before the group's first change.
func (f *Filter) changeBatch(op string, keys [][]byte, ids []uint64, change func(i int, h counting.Hash) error) error {
	if len(keys) != len(ids) {
		return fmt.Errorf("%w: %d keys and %d ids", ErrInvalidInput, len(keys), len(ids))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Refused whole, a batch gets the sentinel itself, not a BatchError.
	if err := f.changeableLocked(); err != nil {
		return err
	}
	var hashes [batchGroup]counting.Hash
	for done := 0; done < len(keys); {
		n := min(batchGroup, len(keys)-done)
		group := f.hashGroup(keys[done:done+n], &hashes)
		f.chain.PrefetchChanges(group, ids[done:done+n])
		for i, h := range group {
			if err := change(done+i, h); err != nil {
				return &BatchError{Op: op, Index: done + i, Len: len(keys), Err: err}
			}
		}
		done += n
	}
	return nil
}

// DropBefore retires every sub-filter whose whole id range is older than id,
// in constant time per sub-filter, and gives their disk space back. The
// newest sub-filter is never retired. It returns how many were retired.
func (f *Filter) DropBefore(id uint64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Retiring nothing changes nothing, and leaves a clean file clean.
	if err := f.changeableLocked(); err != nil || f.chain.Retirable(id) == 0 {
		return 0, err
	}
	if err := f.beginLocked(); err != nil {
		return 0, err
	}
	dropped := f.chain.DropBefore(id)
	f.mu.change.dropped = dropped
	if err := f.commitLocked(); err != nil {
		return len(dropped), fmt.Errorf("engine: %s: retired %d sub-filters but could not give their room back: %w", f.path, len(dropped), err)
	}
	return len(dropped), nil
}

// populateInBackground readies a sub-filter a committed change opened
// (Options.PopulateNewSubFilters). The region's own lock keeps it from
// being unmapped or vacated meanwhile, so a Close waits for it, and one
// that comes after a Close finds the region gone and does nothing. A
// refusal leaves the adds to fault the pages in.
func (f *Filter) populateInBackground(r *mmapfile.Region) {
	defer f.populating.Done()
	_ = r.Populate()
}

// Populate readies every page of the newest sub-filter, the one adds go
// to, for stores, in one call, so that the adds after it do not fault each
// page in at its first store, as adds into a new filter otherwise do, one
// page at a time and in random order. It is for a bulk load into a new
// filter; docs/PERFORMANCE.md (New filters) measures one. It changes no
// byte and no sequence, but it brings the sub-filter's whole room into
// memory at once, and those pages count as written: the next Flush, or the
// kernel's own writeback, writes all of them. So call it before a load
// that will store into most of the sub-filter's pages, not on a filter
// that fills over weeks. Changes wait while it runs (0.3 to 0.4 s for
// the 750 MB of a filter built for 64M keys, in that measure); lookups
// do not. A sub-filter opened later is not populated: call Populate again
// once it has opened, or open the filter with
// Options.PopulateNewSubFilters. A read-only filter gets ErrReadOnly, a
// closed one ErrClosed.
func (f *Filter) Populate() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.changeableLocked(); err != nil {
		return err
	}
	subs := f.chain.SubFilters()
	return spaceOf(subs[len(subs)-1]).region.Populate()
}

// Flush makes every committed change durable: the counters are synced, then
// the header records the durable sequence. After a machine crash the file
// opens clean if nothing changed after the last Flush.
//
// A Flush also costs the changes after it: the first syncs the header's
// dirty mark, and the first store into each page the Flush wrote faults
// once, as the system keeps written pages read-only until they change
// again. Flushing a large filter often slows its changes as well
// (BenchmarkAddFlushEvery measures both).
func (f *Filter) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return ErrClosed
	}
	return f.flushLocked()
}

func (f *Filter) flushLocked() error {
	if f.readOnly {
		// A reader's Stats reads flushErr without the mutex: it stays nil.
		return nil
	}
	err := f.syncLocked()
	f.mu.flushErr = err
	return err
}

// syncLocked makes every committed change of a writer durable: the
// counters, then the durable sequence.
func (f *Filter) syncLocked() error {
	if !f.mu.dirty {
		return nil
	}
	for _, sub := range f.chain.SubFilters() {
		if err := spaceOf(sub).region.Sync(); err != nil {
			return err
		}
	}
	// fsync makes the file's size and allocations durable with the data.
	if err := f.file.Sync(); err != nil {
		return err
	}
	if err := f.header.Sync(); err != nil {
		return err
	}
	seq := f.journal.MemSeq()
	f.state.Store(seqno.State{DurableSeq: seq})
	if err := f.header.Sync(); err != nil {
		return err
	}
	f.mu.dirty, f.mu.durableSeq = false, seq
	return nil
}

// Close flushes the filter and releases the file. Calls after Close return
// ErrClosed (Contains returns false, and Stats the state at Close). On Unix
// lookups may run while it does: one that overlaps Close may miss, and none
// reads the released file (see vacateAll); the filter's address space, no
// longer the file's, is given back when the Filter is garbage collected,
// and at once by a collection that Open, Create or a new sub-filter asks
// for if the system refuses them a mapping for want of it. Elsewhere
// lookups must end before Close.
//
// A writer must be closed. One dropped without Close keeps its file, its
// mappings and its writer lock until the process ends (a mapping holds the
// open file description that the lock is on), so no other writer can open
// the file meanwhile; with Options.FlushWhenIdle it still flushes itself
// when idle. Once the process ends, the next Open finds the file as a
// killed process leaves it.
func (f *Filter) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return ErrClosed
	}
	err := f.flushLocked()
	f.mu.closedStats = f.collectStats()
	f.closed.Store(true)
	if f.idleStop != nil {
		close(f.idleStop)
	}
	f.vacateAll()
	return errors.Join(err, f.file.Close())
}

// vacateAll takes the file out of every mapping at Close, while lookups
// that passed the closed check before it may still be reading them: their
// pages become zeros of no file (mmapfile.Region.Vacate), which a lookup
// reads as keys absent, where an unmapped page would kill the process. The
// addresses are given back once nothing can reach them: a sub-filter's once
// no snapshot holds it (as for retired ones, unmapLaterLocked), the
// header's with the Filter. If a mapping cannot be vacated it keeps the
// file's pages until then.
func (f *Filter) vacateAll() {
	if f.chain != nil {
		for _, sub := range f.chain.SubFilters() {
			region := spaceOf(sub).region
			_ = region.Vacate()
			holdUntilUnreachable(sub, region)
		}
	}
	for _, region := range f.mu.retired {
		_ = region.Vacate()
	}
	f.mu.retired = nil
	_ = f.header.Vacate()
	holdUntilUnreachable(f, f.header)
}

// unmapAll unmaps the live and retired sub-filters and the header at once,
// for a filter no one else has seen (one whose Open failed).
func (f *Filter) unmapAll() {
	if f.chain != nil {
		for _, sub := range f.chain.SubFilters() {
			_ = spaceOf(sub).region.Unmap()
		}
	}
	for _, region := range f.mu.retired {
		_ = region.Unmap()
	}
	f.mu.retired = nil
	_ = f.header.Unmap()
}
