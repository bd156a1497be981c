package engine

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tallybloom/tallybloom/internal/faults"
	"github.com/tallybloom/tallybloom/scaling"
)

// emptyBenchFilter is an empty filter built for capacity keys at 1%, the
// rate the peers are compared at.
func emptyBenchFilter(b *testing.B, capacity uint64) *Filter {
	b.Helper()
	f, err := Create(tempPath(b), Config{Capacity: capacity, ErrorRate: 0.01, Seed: 1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

// benchFilter is a filter of n keys at 1%.
func benchFilter(b *testing.B, n uint64) *Filter {
	b.Helper()
	f := emptyBenchFilter(b, n)
	for i := range n {
		if err := f.Add(key(i), 1); err != nil {
			b.Fatal(err)
		}
	}
	return f
}

const benchKeys = 1 << 20 // key(i) for i < benchKeys, built once per benchmark

func benchKeySet(offset uint64) [][]byte { return keysFrom(offset, offset+benchKeys) }

func BenchmarkContains(b *testing.B) {
	const n = 1_000_000
	f := benchFilter(b, n)
	for _, c := range []struct {
		name string
		keys [][]byte
	}{{"member", benchKeySet(0)}, {"non-member", benchKeySet(1 << 40)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.keys[0])))
			i := 0
			for b.Loop() {
				f.Contains(c.keys[i&(benchKeys-1)])
				i++
			}
		})
	}
}

// BenchmarkContainsBatch compares a batch of 1024 lookups with single
// calls, on a filter that stays in the cache so that what is timed is the
// lookups' own work, for keys of one length and keys of 16 to 64 bytes.
func BenchmarkContainsBatch(b *testing.B) {
	const n = 20_000
	f := benchFilter(b, n)
	for _, c := range []struct {
		name string
		keys [][]byte
	}{{"one-length", keysFrom(0, n)}, {"mixed-lengths", mixedLengthKeys(n)}} {
		for _, batched := range []bool{false, true} {
			b.Run(c.name+"/"+map[bool]string{false: "single", true: "batch"}[batched], func(b *testing.B) {
				out := make([]bool, 0, 1024)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					start := (i * 1024) % (n - 1024)
					if batched {
						out = f.ContainsBatch(c.keys[start:start+1024], out)
					} else {
						for _, k := range c.keys[start : start+1024] {
							f.Contains(k)
						}
					}
					i++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/key")
			})
		}
	}
}

// mixedLengthKeys is n distinct keys of 16 to 64 bytes, their lengths in
// no order: each begins with its index and is padded with bytes drawn from
// it.
func mixedLengthKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		x := uint64(i)
		k := binary.LittleEndian.AppendUint64(nil, x)
		for len(k) < 64 {
			x = mixBits(x + 1)
			k = binary.LittleEndian.AppendUint64(k, x)
		}
		keys[i] = k[:16+mixBits(uint64(i))%49]
	}
	return keys
}

// mixBits scatters the bits of x, so that lengths drawn from consecutive
// keys follow no pattern a branch predictor could learn.
func mixBits(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x
}

// BenchmarkContainsParallel runs Contains from every core, lock-free and,
// as a baseline, behind a mutex.
func BenchmarkContainsParallel(b *testing.B) {
	f := benchFilter(b, 1_000_000)
	keys := benchKeySet(0)
	var mu sync.Mutex
	for _, locked := range []bool{false, true} {
		b.Run(map[bool]string{false: "lock-free", true: "mutex"}[locked], func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if locked {
						mu.Lock()
					}
					f.Contains(keys[i&(benchKeys-1)])
					if locked {
						mu.Unlock()
					}
					i++
				}
			})
		})
	}
}

// BenchmarkAdd adds to a filter of 1M keys (see renewedFilter): as it is,
// without the undo record and the sequence (what the crash bookkeeping
// costs, a switch only benchmarks reach), and with Options.FlushWhenIdle
// looking every millisecond, which adds that keep coming never let flush:
// dirty-marks counts the flushes a run made, as each makes the next add
// mark the file dirty (the first add of each filter marks it). faults/op
// counts the faults left, the flushes' among them.
func BenchmarkAdd(b *testing.B) {
	for _, way := range []string{"bookkeeping", "no-bookkeeping", "flush-when-idle"} {
		b.Run(way, func(b *testing.B) {
			var opts *Options
			if way == "flush-when-idle" {
				opts = &Options{FlushWhenIdle: time.Millisecond}
			}
			keys := benchKeySet(0)
			r := newRenewedFilter(b, opts, func(f *Filter) { f.unjournaled = way == "no-bookkeeping" })
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				if err := r.room(1).Add(keys[i&(benchKeys-1)], i); err != nil {
					b.Fatal(err)
				}
				i++
			}
			r.faults.Report(b, b.N, "op")
			b.ReportMetric(float64(r.marks+r.f.mu.marks), "dirty-marks")
		})
	}
}

// renewedFilter is a filter built by default for renewedCapacity keys,
// populated before the timing, as those of a service's filter that has run
// a while are, so that no add pays for the first store into its page; and,
// once it has taken that many adds, a new one in its place, made with the
// timer and the count of faults stopped, so that no timed add opens a
// sub-filter and stores into its new pages. Its count of faults starts
// when it is made: make it after the benchmark's other setup.
type renewedFilter struct {
	b       *testing.B
	opts    *Options
	prepare func(*Filter)
	f       *Filter
	added   uint64
	marks   int // the dirty marks of the filters replaced
	faults  faults.Counter
}

const renewedCapacity = 1_000_000

func newRenewedFilter(b *testing.B, opts *Options, prepare func(*Filter)) *renewedFilter {
	r := &renewedFilter{b: b, opts: opts, prepare: prepare}
	r.f = r.create()
	r.faults = faults.Start()
	return r
}

func (r *renewedFilter) create() *Filter {
	f, err := Create(tempPath(r.b), Config{Capacity: renewedCapacity, ErrorRate: 0.01, Seed: 1}, r.opts)
	if err != nil {
		r.b.Fatal(err)
	}
	r.b.Cleanup(func() { f.Close() })
	if err := f.Populate(); err != nil {
		r.b.Fatal(err)
	}
	if r.prepare != nil {
		r.prepare(f)
	}
	return f
}

// room is the filter to add n keys to: a new one if they would not fit.
func (r *renewedFilter) room(n uint64) *Filter {
	if r.added+n > renewedCapacity {
		r.b.StopTimer()
		r.faults.Pause()
		r.marks += r.f.mu.marks
		if err := r.f.Close(); err != nil {
			r.b.Fatal(err)
		}
		if err := os.Remove(r.f.Path()); err != nil {
			r.b.Fatal(err)
		}
		r.f, r.added = r.create(), 0
		r.faults.Resume()
		r.b.StartTimer()
	}
	r.added += n
	return r.f
}

// flushCapacity is the capacity of BenchmarkAddFlushEvery's filter: 4M keys
// (27 MB) by default; -flush.capacity 64000000 gives the 430 MB filter
// docs/PERFORMANCE.md quotes, where large pages write far more than what
// changed.
var flushCapacity = flag.Uint64("flush.capacity", 4_000_000, "keys BenchmarkAddFlushEvery's filter is built for")

// BenchmarkAddFlushEvery adds to a filter whose pages earlier adds have
// touched, flushing every so many adds, with 4 KiB pages and with
// Options.LargePages, and reports the time an add spends in Flush
// (flush-ns/op) and the page faults an add takes (faults/op) beside its
// whole time. Two costs of a flush fall on the adds after it: the first
// change syncs the header's dirty mark (the crash protocol), and the pages
// a flush wrote stay read-only until they change again, so the next store
// into each such page faults, once. Flushing a large filter often
// therefore slows the adds between flushes too; with large pages a fault
// covers 2 MiB, and a flush writes every changed 2 MiB page whole. The
// kernel's own writeback does what a flush does to the pages: the
// adds=never rows run for a minute or more (-benchtime 90s) show what it
// costs adds that never pause.
func BenchmarkAddFlushEvery(b *testing.B) {
	capacity := *flushCapacity
	for _, pages := range []string{"4KiB", "large"} {
		for _, every := range []int{1_000, 100_000, 0} {
			adds := "never"
			if every > 0 {
				adds = fmt.Sprint(every)
			}
			b.Run(fmt.Sprintf("pages=%s/adds=%s", pages, adds), func(b *testing.B) {
				benchmarkAddFlushEvery(b, capacity, every, &Options{LargePages: pages == "large"})
			})
		}
	}
}

func benchmarkAddFlushEvery(b *testing.B, capacity uint64, every int, o *Options) {
	f, err := Create(tempPath(b), Config{Capacity: capacity, ErrorRate: 0.01, Seed: 1, Fixed: true}, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	// A quarter of the capacity touches every page of the counters and the
	// presence bits.
	if err := f.AddBatch(keysFrom(1<<40, 1<<40+capacity/4), make([]uint64, capacity/4)); err != nil {
		b.Fatal(err)
	}
	if err := f.Flush(); err != nil {
		b.Fatal(err)
	}
	keys := benchKeySet(0)
	var flushing time.Duration
	b.ReportAllocs()
	c := faults.Start()
	var slowest time.Duration
	window := time.Now()
	i := 0
	for b.Loop() {
		if err := f.Add(keys[i&(benchKeys-1)], 1); err != nil {
			b.Fatal(err)
		}
		if i++; every > 0 && i%every == 0 {
			start := time.Now()
			if err := f.Flush(); err != nil {
				b.Fatal(err)
			}
			flushing += time.Since(start)
		}
		if i%windowAdds == 0 {
			slowest, window = max(slowest, time.Since(window)), time.Now()
		}
	}
	b.ReportMetric(float64(flushing.Nanoseconds())/float64(b.N), "flush-ns/op")
	c.Report(b, b.N, "op")
	if b.N >= windowAdds {
		b.ReportMetric(float64(slowest.Nanoseconds())/windowAdds, "slowest-window-ns/op")
	}
}

// windowAdds is how many adds BenchmarkAddFlushEvery times together to find
// its slowest stretch (slowest-window-ns/op): a few tenths of a second. Run
// for a minute or more without a Flush, the slowest stretch shows what the
// kernel's own writeback costs the adds that meet it (see
// docs/PERFORMANCE.md, Flush).
const windowAdds = 1 << 20

// fullBenchFilter is a default filter of n keys at 1%, each added with id
// 1, its keys, the ids of a batch of 1024 of them, and fill, which adds
// them all again.
func fullBenchFilter(b *testing.B, n int) (f *Filter, keys [][]byte, ids []uint64, fill func()) {
	f = emptyBenchFilter(b, uint64(n))
	keys = keysFrom(0, uint64(n))
	ids = make([]uint64, 1024)
	for i := range ids {
		ids[i] = 1
	}
	fill = func() {
		for start := 0; start < n; start += 1024 {
			end := min(start+1024, n)
			if err := f.AddBatch(keys[start:end], ids[:end-start]); err != nil {
				b.Fatal(err)
			}
		}
	}
	fill()
	return f, keys, ids, fill
}

// BenchmarkRemove removes the keys of a default filter of a million keys,
// each from a block out of the cache; once all are gone, they are added
// again with the timer and the count of faults stopped.
func BenchmarkRemove(b *testing.B) {
	const n = 1_000_000
	f, keys, _, fill := fullBenchFilter(b, n)
	b.ReportAllocs()
	c := faults.Start()
	i := 0
	for b.Loop() {
		if i == n {
			b.StopTimer()
			c.Pause()
			fill()
			c.Resume()
			b.StartTimer()
			i = 0
		}
		if err := f.Remove(keys[i], 1); err != nil {
			b.Fatal(err)
		}
		i++
	}
	c.Report(b, b.N, "op")
}

// BenchmarkTestAndAdd cycles through benchKeys keys: the first pass adds
// each, the later ones find it. The filter is built for those keys, so
// that no sub-filter opens, and populated before the timing, so that no
// add stores first into its page; faults/op counts what faults are left.
func BenchmarkTestAndAdd(b *testing.B) {
	f := emptyBenchFilter(b, benchKeys)
	if err := f.Populate(); err != nil {
		b.Fatal(err)
	}
	keys := benchKeySet(0)
	b.ReportAllocs()
	c := faults.Start()
	i := uint64(0)
	for b.Loop() {
		if _, err := f.TestAndAdd(keys[i&(benchKeys-1)], i); err != nil {
			b.Fatal(err)
		}
		i++
	}
	c.Report(b, b.N, "op")
}

// openSizes are the filters BenchmarkOpen and BenchmarkRecover compare:
// their cost must not grow with the size.
var openSizes = []struct {
	name     string
	capacity uint64 // at 1%, giving about the named size of counters
}{{"1MiB", 110_000}, {"1GiB", 115_000_000}, {"4GiB", 460_000_000}}

// sizedFilter creates a closed filter of about the named size, or skips
// when the disk has no room for it.
func sizedFilter(b *testing.B, capacity uint64) (path string, bytes uint64) {
	b.Helper()
	path = tempPath(b)
	f, err := Create(path, Config{Capacity: capacity, ErrorRate: 0.01, Growth: 1, Seed: 1}, nil)
	if errors.Is(err, syscall.ENOSPC) {
		b.Skipf("no room on disk for %d keys: %v", capacity, err)
	}
	if err != nil {
		b.Fatal(err)
	}
	bytes = f.Stats().CounterBytes
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path, bytes
}

func BenchmarkOpen(b *testing.B) {
	for _, size := range openSizes {
		b.Run(size.name, func(b *testing.B) {
			path, bytes := sizedFilter(b, size.capacity)
			b.ReportMetric(float64(bytes)/(1<<20), "MiB")
			b.ReportAllocs()
			for b.Loop() {
				g, err := Open(path, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := g.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRecover opens a file whose writer was killed mid-change: the
// undo record is applied, and the cost does not grow with the size.
func BenchmarkRecover(b *testing.B) {
	for _, size := range openSizes {
		b.Run(size.name, func(b *testing.B) {
			path, bytes := sizedFilter(b, size.capacity)
			b.ReportMetric(float64(bytes)/(1<<20), "MiB")
			for b.Loop() {
				b.StopTimer()
				crashMidChange(b, path)
				b.StartTimer()
				g, err := Open(path, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if !g.Stats().Recovered {
					b.Fatal("nothing was recovered")
				}
				if err := g.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// crashMidChange leaves path as a writer killed after sealing an add's undo
// record and writing part of its block.
func crashMidChange(b *testing.B, path string) {
	f, err := Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	f.mu.Lock()
	if err := f.beginLocked(); err != nil {
		b.Fatal(err)
	}
	sub := f.chain.SubFilters()[0]
	p := probeOf(sub, f.hasher.Key(key(42)))
	store{f}.Touch(sub, p)
	p.Spans(func(offset uint64, _ int) { spaceOf(sub).counters[offset] = 0xff })
	f.mu.Unlock()
	abandon(b, f)
}

// BenchmarkAddBatch adds batches of 1024 keys of one length and of 16 to
// 64 bytes to a filter of 1M keys (see renewedFilter); faults/key counts
// the faults left.
func BenchmarkAddBatch(b *testing.B) {
	for _, c := range []struct {
		name string
		keys [][]byte
	}{{"one-length", benchKeySet(0)}, {"mixed-lengths", mixedLengthKeys(benchKeys)}} {
		b.Run(c.name, func(b *testing.B) {
			r := newRenewedFilter(b, nil, nil)
			ids := make([]uint64, 1024)
			b.ReportAllocs()
			next := uint64(0)
			for b.Loop() {
				start := next & (benchKeys - 1) &^ 1023
				for i := range ids {
					ids[i] = next
				}
				if err := r.room(1024).AddBatch(c.keys[start:start+1024], ids); err != nil {
					b.Fatal(err)
				}
				next += 1024
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/key")
			r.faults.Report(b, b.N*1024, "key")
		})
	}
}

// BenchmarkRemoveBatch removes 1024 keys of a full filter and adds them
// back, in batches or one call a key: a remove cannot be timed alone for
// long without emptying the filter.
func BenchmarkRemoveBatch(b *testing.B) {
	const n = 1_000_000
	f, keys, groupIDs, _ := fullBenchFilter(b, n)
	for _, batched := range []bool{true, false} {
		b.Run(map[bool]string{true: "batch", false: "single"}[batched], func(b *testing.B) {
			b.ReportAllocs()
			var removed []bool
			next := 0
			for b.Loop() {
				group := keys[next : next+1024]
				next = (next + 1024) % (n - n%1024)
				if batched {
					var err error
					if removed, err = f.RemoveBatch(group, groupIDs, removed); err != nil {
						b.Fatal(err)
					}
					if err := f.AddBatch(group, groupIDs); err != nil {
						b.Fatal(err)
					}
					continue
				}
				for i, k := range group {
					if err := f.Remove(k, groupIDs[i]); err != nil {
						b.Fatal(err)
					}
				}
				for i, k := range group {
					if err := f.Add(k, groupIDs[i]); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/key")
		})
	}
}

// BenchmarkDropBefore opens a sub-filter and retires the oldest, one of each
// per iteration: the cost of a retirement does not depend on how many keys
// the retired sub-filter held.
func BenchmarkDropBefore(b *testing.B) {
	for _, capacity := range []uint64{100, 100_000} {
		b.Run(fmt.Sprintf("capacity=%d", capacity), func(b *testing.B) {
			f, err := Create(tempPath(b), Config{Capacity: capacity, ErrorRate: 0.01, Growth: 1, Seed: 1}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			id := fillChain(b, f, 2, 0)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				id = fillChain(b, f, 3, id)
				b.StartTimer()
				if n, err := f.DropBefore(f.Stats().SubFilters[1].FirstID); err != nil || n != 1 {
					b.Fatal(n, err)
				}
			}
		})
	}
}

// BenchmarkAddOpeningSubFilter measures an Add that opens a sub-filter (of
// capacity 1, so that every add with a new id opens one): at a level the
// chain plans for the first time, as a new process does, and at a level
// planned before, as a long-lived one that retires old sub-filters does.
func BenchmarkAddOpeningSubFilter(b *testing.B) {
	// create makes a filter whose one sub-filter is full, holding id 1.
	create := func(b *testing.B) *Filter {
		f, err := Create(tempPath(b), Config{Capacity: 1, ErrorRate: 0.01, Growth: 1, Seed: 1}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Add(key(0), 1); err != nil {
			b.Fatal(err)
		}
		return f
	}
	for _, planned := range []bool{false, true} {
		b.Run(map[bool]string{false: "new-level", true: "planned-level"}[planned], func(b *testing.B) {
			f := create(b)
			defer func() { f.Close() }()
			id := uint64(1)
			for b.Loop() {
				if len(f.chain.SubFilters()) == scaling.MaxSubFilters {
					b.StopTimer()
					if planned {
						if _, err := f.DropBefore(id - 1); err != nil {
							b.Fatal(err)
						}
					} else {
						f.Close()
						f = create(b)
					}
					b.StartTimer()
				}
				id++
				if err := f.Add(key(id), id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
