package scaling

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"sync/atomic"

	"github.com/tallybloom/tallybloom/counting"
	"github.com/tallybloom/tallybloom/internal/release"
)

// Chain is the chain of sub-filters.
type Chain struct {
	params  Params
	storage Storage
	// current is the immutable snapshot of retained sub-filters. Readers
	// load it without a lock; changes replace it.
	current atomic.Pointer[snapshot]
	// planned caches the shape of each level, which depends on the level
	// alone: planning takes about a third of a millisecond, under the
	// writer's lock, and a retired level is taken again. Used by changes
	// only.
	planned [MaxSubFilters]*Level
	// probe is the located counters of the change in flight, kept here so
	// that a change neither copies nor allocates one. Used by changes only.
	probe counting.Probe
}

// snapshot is the retained sub-filters, oldest first, and the same filters
// laid out for lookups. It keeps retired sub-filters, and so their mappings,
// alive until no reader uses them.
type snapshot struct {
	subs []*SubFilter
	set  counting.Set
}

// publish makes subs the chain's sub-filters for every later reader.
func (c *Chain) publish(subs []*SubFilter) {
	filters := make([]*counting.Filter, len(subs))
	for i, s := range subs {
		filters[i] = s.filter
	}
	c.current.Store(&snapshot{subs: subs, set: counting.NewSet(filters)})
}

// New starts a chain with its level-0 sub-filter, whose FirstID is 0, so that
// every id is routed somewhere.
func New(params Params, storage Storage) (*Chain, error) {
	if err := errors.Join(params.Validate(), storageGiven(storage)); err != nil {
		return nil, err
	}
	c := &Chain{params: params, storage: storage}
	c.publish(nil)
	if _, err := c.open(0); err != nil {
		return nil, err
	}
	return c, nil
}

// Restore rebuilds a chain from sub-filters read back from storage, oldest
// first. Their FirstIDs must grow strictly and their levels be distinct.
func Restore(params Params, storage Storage, subs []*SubFilter) (*Chain, error) {
	if err := errors.Join(params.Validate(), storageGiven(storage), checkDirectory(subs)); err != nil {
		return nil, err
	}
	c := &Chain{params: params, storage: storage}
	c.publish(subs)
	return c, nil
}

// Replace swaps in a new list of sub-filters, for a reader that follows
// another process's changes.
func (c *Chain) Replace(subs []*SubFilter) error {
	if err := checkDirectory(subs); err != nil {
		return err
	}
	c.publish(subs)
	return nil
}

func checkDirectory(subs []*SubFilter) error {
	if len(subs) == 0 || len(subs) > MaxSubFilters {
		return errorf("%d sub-filters", len(subs))
	}
	var levels uint64
	for i, s := range subs {
		switch {
		case s == nil:
			return errorf("sub-filter %d is nil", i)
		case s.Level < 0 || s.Level >= MaxSubFilters:
			return errorf("sub-filter %d at level %d", i, s.Level)
		}
		if levels&(1<<s.Level) != 0 {
			return errorf("level %d held twice", s.Level)
		}
		levels |= 1 << s.Level
		if i > 0 && s.FirstID <= subs[i-1].FirstID {
			return errorf("first ids out of order at sub-filter %d", i)
		}
	}
	return nil
}

// storageGiven refuses a nil Storage.
func storageGiven(storage Storage) error {
	if storage == nil {
		return fmt.Errorf("%w: a nil Storage", ErrInvalidParams)
	}
	return nil
}

// Params are the chain's parameters.
func (c *Chain) Params() Params { return c.params }

// SubFilters is the current list of retained sub-filters, oldest first. The
// slice must not be modified.
func (c *Chain) SubFilters() []*SubFilter { return c.current.Load().subs }

// Contains reports whether any sub-filter holds the key, newest first. With
// several sub-filters it first loads the key's block in each, so their cache
// misses overlap, and rules out most of them without a branch on a counter:
// a key in none of them costs about one miss, not one per sub-filter.
func (c *Chain) Contains(h counting.Hash) bool { return containsIn(c.current.Load(), h) }

// ContainsBatch appends to out whether any sub-filter holds each hash, all
// from one snapshot. A chain of one sub-filter hands the batch to it, which
// asks for every hash's block before it tests any; a longer chain first
// loads a word of every hash's block in every sub-filter, so that all their
// cache misses are under way together before any is tested.
func (c *Chain) ContainsBatch(hashes []counting.Hash, out []bool) []bool {
	snap := c.current.Load()
	if len(snap.subs) == 1 {
		out = snap.subs[0].filter.ContainsBatch(hashes, out)
		runtime.KeepAlive(snap)
		return out
	}
	for _, h := range hashes {
		snap.set.Warm(h)
	}
	for _, h := range hashes {
		out = append(out, containsIn(snap, h))
	}
	return out
}

// PrefetchChanges asks for the block each add or remove of a batch will
// write, in the sub-filter its id routes to now, so that the batch's cache
// misses are under way before the first change needs its block. An add
// that opens a new sub-filter finds its block cold; nothing else depends on
// the request.
func (c *Chain) PrefetchChanges(hashes []counting.Hash, ids []uint64) {
	subs := c.current.Load().subs
	for i, h := range hashes {
		prefetchIn(subs, h, ids[i])
	}
}

// PrefetchChange asks for the block an add or remove of the key with id
// would write, as PrefetchChanges does. It takes no lock: a caller asks
// before it waits for the writer's lock, so that the block's cache miss
// runs while it does. It changes nothing, and a prefetch never faults, so a
// sub-filter retired meanwhile does no harm.
func (c *Chain) PrefetchChange(h counting.Hash, id uint64) {
	prefetchIn(c.current.Load().subs, h, id)
}

func prefetchIn(subs []*SubFilter, h counting.Hash, id uint64) {
	if i, err := route(subs, id); err == nil {
		subs[i].filter.Prefetch(h)
	}
}

// containsIn tests the key against a snapshot: the one sub-filter, or the
// candidates the set leaves, newest first.
func containsIn(snap *snapshot, h counting.Hash) bool {
	if len(snap.subs) == 1 {
		found := snap.subs[0].filter.Contains(h)
		runtime.KeepAlive(snap)
		return found
	}
	found := false
	for maybe := snap.set.Candidates(h); maybe != 0; {
		i := bits.Len64(maybe) - 1
		if snap.subs[i].filter.Contains(h) {
			found = true
			break
		}
		maybe &^= 1 << i
	}
	runtime.KeepAlive(snap)
	return found
}

// Add adds the key to the sub-filter that owns id, opening a new sub-filter
// when the newest is full and id is newer than all it holds.
func (c *Chain) Add(h counting.Hash, id uint64) error {
	subs := c.current.Load().subs
	i, err := route(subs, id)
	if err != nil {
		return err
	}
	sub := subs[i]
	if !c.params.Fixed && i == len(subs)-1 && sub.Count() >= sub.Capacity && id > sub.MaxID() {
		if sub, err = c.open(id); err != nil {
			return err
		}
	}
	p := &c.probe
	sub.filter.Locate(h, p)
	sub.filter.WarmProbe(p)
	c.storage.Touch(sub, p)
	raised := sub.filter.Increment(p)
	release.Add64(sub.count, 1)
	release.Add64(sub.nonZero, uint64(raised))
	if id > sub.MaxID() {
		release.Store64(sub.maxID, id)
	}
	return nil
}

// Remove removes the key from the sub-filter that owns id. If that sub-filter
// does not hold it (a counter is zero, or it holds nothing) it returns
// ErrNotFound and changes nothing.
func (c *Chain) Remove(h counting.Hash, id uint64) error {
	sub, err := c.holder(h, id)
	if err != nil {
		return err
	}
	c.storage.Touch(sub, &c.probe)
	cleared, _ := sub.filter.Decrement(&c.probe)
	release.Add64(sub.count, ^uint64(0))
	release.Add64(sub.nonZero, ^uint64(cleared-1))
	return nil
}

// Holds returns what Remove would without changing anything: nil if the
// sub-filter that owns id holds the key, else ErrIDRetired or ErrNotFound.
func (c *Chain) Holds(h counting.Hash, id uint64) error {
	_, err := c.holder(h, id)
	return err
}

// holder is the sub-filter that owns id, if it holds the key, with the key's
// probe in it stored in c.probe.
func (c *Chain) holder(h counting.Hash, id uint64) (*SubFilter, error) {
	subs := c.current.Load().subs
	i, err := route(subs, id)
	if err != nil {
		return nil, err
	}
	sub := subs[i]
	sub.filter.Locate(h, &c.probe)
	if sub.Count() == 0 || !sub.filter.Held(&c.probe) {
		return nil, ErrNotFound
	}
	return sub, nil
}

// DropBefore retires every sub-filter whose whole id range is older than id
// and returns them; the caller gives their room back once the change is
// committed. The newest sub-filter is never retired.
func (c *Chain) DropBefore(id uint64) []*SubFilter {
	subs := c.current.Load().subs
	keep := retirable(subs, id)
	if keep == 0 {
		return nil
	}
	retained := subs[keep:len(subs):len(subs)]
	c.storage.Publish(retained)
	c.publish(retained)
	return subs[:keep:keep]
}

// Retirable is how many sub-filters DropBefore(id) would retire.
func (c *Chain) Retirable(id uint64) int { return retirable(c.current.Load().subs, id) }

// retirable is how many of subs, oldest first, have a whole id range older
// than id; the newest never has.
func retirable(subs []*SubFilter, id uint64) int {
	n := 0
	for n < len(subs)-1 && subs[n+1].FirstID <= id {
		n++
	}
	return n
}

// open allocates a sub-filter at the lowest free level with firstID and
// appends it to the chain.
func (c *Chain) open(firstID uint64) (*SubFilter, error) {
	subs := c.current.Load().subs
	level, ok := nextLevel(subs)
	if !ok {
		return nil, fmt.Errorf("%w: it holds %d sub-filters, the most it can; retire old ones with DropBefore", ErrChainFull, MaxSubFilters)
	}
	shape := c.planned[level]
	if shape == nil {
		planned, err := c.params.Level(level)
		if err != nil {
			return nil, err
		}
		shape = &planned
		c.planned[level] = shape
	}
	space, err := c.storage.Allocate(level, shape.Geometry)
	if err != nil {
		return nil, err
	}
	sub, err := Attach(Entry{Level: level, FirstID: firstID, Capacity: shape.Capacity, Geometry: shape.Geometry}, space)
	if err != nil {
		return nil, err
	}
	sub.resetTallies()
	grown := append(subs[:len(subs):len(subs)], sub)
	c.storage.Publish(grown)
	c.publish(grown)
	return sub, nil
}

// NextLevel is the level of the sub-filter the chain opens next; ok is
// false when it holds MaxSubFilters and can open none.
func (c *Chain) NextLevel() (level int, ok bool) { return nextLevel(c.current.Load().subs) }

// nextLevel is the lowest level none of subs holds: a retired sub-filter's
// level is taken again.
func nextLevel(subs []*SubFilter) (int, bool) {
	if len(subs) == MaxSubFilters {
		return 0, false
	}
	var held uint64
	for _, s := range subs {
		held |= 1 << s.Level
	}
	level := 0
	for held&(1<<level) != 0 {
		level++
	}
	return level, true
}

// route finds the sub-filter that owns id: the newest whose FirstID is at
// most id.
func route(subs []*SubFilter, id uint64) (int, error) {
	for i := len(subs) - 1; i >= 0; i-- {
		if subs[i].FirstID <= id {
			return i, nil
		}
	}
	return 0, ErrIDRetired
}
