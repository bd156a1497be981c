package engine

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/tallybloom/tallybloom/counting"
)

// Contains reports whether key was probably added (and not removed). It
// never reports false for a key that was added and not removed, unless
// DropBefore retired the sub-filter that held it or the filter is closed.
// Any number of goroutines may call it, during changes too; it takes no
// lock and does not allocate.
func (f *Filter) Contains(key []byte) bool {
	// current, written out: a lookup into one sub-filter then makes no call
	// but the hash's and the sub-filter's.
	h := f.hasher.Key(key)
	if f.closed.Load() {
		return false
	}
	if f.stale() {
		f.follow()
	}
	return f.chain.Contains(h)
}

// ContainsString is Contains for a string key, without converting it.
func (f *Filter) ContainsString(key string) bool {
	return f.Contains(unsafe.Slice(unsafe.StringData(key), len(key))) // only read
}

// ContainsBatch reports Contains for every key, appending to out[:0] and
// returning it; pass the previous result to reuse its room. On a filter
// larger than the cache it overlaps the cache misses of many keys: it works
// through the keys in groups, first reading a byte at each end of every key
// of the group so that the keys' own misses are all under way, then hashing
// them, then letting the chain start every block's miss before it tests
// any.
func (f *Filter) ContainsBatch(keys [][]byte, out []bool) []bool {
	out = out[:0]
	if !f.current() {
		return append(out, make([]bool, len(keys))...)
	}
	var hashes [batchGroup]counting.Hash
	for len(keys) > 0 {
		n := min(batchGroup, len(keys))
		out = f.chain.ContainsBatch(f.hashGroup(keys[:n], &hashes), out)
		keys = keys[n:]
	}
	return out
}

// batchGroup is how many keys the batch calls hash before working on any.
const batchGroup = 64

// hashGroup hashes keys, at most batchGroup of them, into hashes. It first
// reads the first and last byte of every key: that loop is a few
// instructions a key, so the processor has every key's cache miss in flight
// at once, where hashing, a hundred instructions a key, lets only a few
// overlap. Keys that do not come in order of length it then hashes in that
// order (hashes[i] is still the hash of keys[i]): the hash's loops and
// branches depend on the length alone, so keys of one length after another
// leave nothing to mispredict, where keys of mixed lengths mispredict a few
// times a key.
func (f *Filter) hashGroup(keys [][]byte, hashes *[batchGroup]counting.Hash) []counting.Hash {
	var b byte
	var classes [batchGroup]uint8
	var prev, descents uint64
	for i, k := range keys {
		if len(k) > 0 {
			b ^= k[0] ^ k[len(k)-1]
		}
		c := uint64(len(k) % lengthClasses)
		classes[i] = uint8(c)
		descents |= (c - prev) >> 63 // 1 if c < prev, without a branch
		prev = c
	}
	runtime.KeepAlive(b) // the reads are the point, not their value
	if descents == 0 {
		for i, key := range keys {
			hashes[i] = f.hasher.Key(key)
		}
	} else {
		order := byLength(classes[:len(keys)])
		for _, i := range order[:len(keys)] {
			hashes[i] = f.hasher.Key(keys[i])
		}
	}
	return hashes[:len(keys)]
}

// lengthClasses is how many classes hashGroup sorts keys into, by length
// modulo it. Keys of one class up to 64 bytes have one length; longer keys
// of one class end alike and differ only in how many 32-byte stripes the
// hash takes.
const lengthClasses = 64

// byLength is the indexes of classes in order of class, those of one class
// in the order given: a counting sort, whose loops take no branch on the
// data.
func byLength(classes []uint8) (order [batchGroup]uint8) {
	var starts [lengthClasses]uint8
	for _, c := range classes {
		starts[c]++
	}
	// The running sum stays in a register rather than being read back from
	// the array.
	var sum uint8
	for c, n := range starts {
		starts[c] = sum
		sum += n
	}
	for i, c := range classes {
		order[starts[c]] = uint8(i)
		starts[c]++
	}
	return order
}

// current reports whether the filter is open and, for a reader, brings its
// view of the directory up to date with the writer's. The check is one load
// while the directory stays as it is.
func (f *Filter) current() bool {
	if f.closed.Load() {
		return false
	}
	if f.stale() {
		f.follow()
	}
	return true
}

// stale reports that the filter is a reader and the writer has announced a
// directory other than the one it follows.
func (f *Filter) stale() bool {
	return f.readOnly && atomic.LoadUint64(f.dirSeq) != f.seenDirSeq.Load()
}

// follow reloads the directory a stale reader found announced, unless the
// last reload found that announcement not yet committed (announcedEarly).
func (f *Filter) follow() {
	if !f.announcedEarly(atomic.LoadUint64(f.dirSeq)) {
		f.reload()
	}
}

// announcedEarly reports that dirSeq is a directory the last reload found
// announced but not committed, and that no change has committed since: the
// writer is committing it, or died before it could. Looking again would
// find the same, so a lookup does not, until the memory sequence moves.
func (f *Filter) announcedEarly(dirSeq uint64) bool {
	return dirSeq == f.early.dirSeq.Load() && f.journal.MemSeq() == f.early.memSeq.Load()
}

// reload follows a directory the writer changed. A failure keeps the old
// view; the next call tries again.
func (f *Filter) reload() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reloads.Add(1)
	dirSeq := atomic.LoadUint64(f.dirSeq)
	if f.closed.Load() || dirSeq == f.seenDirSeq.Load() {
		return
	}
	memSeq := f.journal.MemSeq()
	if f.followLocked(memSeq) == nil && f.seenDirSeq.Load() != dirSeq {
		// The memory sequence first, so that announcedEarly never pairs
		// this announcement with a sequence it was not seen at.
		f.early.memSeq.Store(memSeq)
		f.early.dirSeq.Store(dirSeq)
	}
}

// followLocked brings a reader's view to the directory that is live at
// sequence memSeq, if it is not there yet.
func (f *Filter) followLocked(memSeq uint64) error {
	size, err := f.file.Size()
	if err != nil {
		return err
	}
	dir, slot, err := f.directoryAt(memSeq, size)
	if err != nil {
		return err
	}
	if dir.generation == f.seenDirSeq.Load() {
		return nil
	}
	old := f.chain.SubFilters()
	subs, err := f.attach(dir.entries, old)
	if err != nil {
		return err
	}
	if err := f.chain.Replace(subs); err != nil {
		return corrupt(f.path, "%v", err)
	}
	for _, sub := range old {
		if !containsSub(subs, sub) {
			f.unmapLaterLocked(sub)
		}
	}
	f.mu.liveSlot = slot
	f.seenDirSeq.Store(dir.generation)
	return nil
}
