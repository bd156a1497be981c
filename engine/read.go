package engine

import (
	"sync/atomic"

	"github.com/tallybloom/tallybloom/counting"
)

// Contains reports whether key was probably added (and not removed). It
// never reports false for a key that was added and not removed. Any number
// of goroutines may call it, during changes too; it takes no lock and does
// not allocate.
func (f *Filter) Contains(key []byte) bool { return f.contains(f.hasher.Key(key)) }

// ContainsString is Contains for a string key, without converting it.
func (f *Filter) ContainsString(key string) bool { return f.contains(f.hasher.String(key)) }

func (f *Filter) contains(h counting.Hash) bool {
	if !f.current() {
		return false
	}
	return f.chain.Contains(h)
}

// ContainsBatch reports Contains for every key, appending to out[:0] and
// returning it; pass the previous result to reuse its room. It hashes keys
// a group at a time and starts every block's cache miss in the group before
// testing any, so on a filter larger than the cache the misses overlap.
func (f *Filter) ContainsBatch(keys [][]byte, out []bool) []bool {
	out = out[:0]
	if !f.current() {
		return append(out, make([]bool, len(keys))...)
	}
	const group = 16
	var hashes [group]counting.Hash
	for len(keys) > 0 {
		n := min(group, len(keys))
		for i, key := range keys[:n] {
			hashes[i] = f.hasher.Key(key)
			f.chain.Warm(hashes[i])
		}
		for _, h := range hashes[:n] {
			out = append(out, f.chain.ContainsWarmed(h))
		}
		keys = keys[n:]
	}
	return out
}

// current reports whether the filter is open and, for a reader, brings its
// view of the directory up to date with the writer's. The check is one load.
func (f *Filter) current() bool {
	if f.closed.Load() {
		return false
	}
	if f.readOnly && atomic.LoadUint64(f.dirSeq) != f.seenDirSeq.Load() {
		f.reload()
	}
	return true
}

// reload follows a directory the writer changed. A failure keeps the old
// view; the next call tries again.
func (f *Filter) reload() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() || atomic.LoadUint64(f.dirSeq) == f.seenDirSeq.Load() {
		return
	}
	size, err := f.file.Size()
	if err != nil {
		return
	}
	dir, slot, err := f.liveDirectory(f.journal.MemSeq(), size)
	if err != nil {
		return
	}
	old := f.chain.SubFilters()
	subs, err := f.attach(dir.entries, old)
	if err != nil || f.chain.Replace(subs) != nil {
		return
	}
	for _, sub := range old {
		if !containsSub(subs, sub) {
			f.unmapLaterLocked(sub)
		}
	}
	f.mu.liveSlot = slot
	f.seenDirSeq.Store(dir.generation)
}
