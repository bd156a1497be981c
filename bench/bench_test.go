package bench

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/internal/faults"
	"github.com/tallybloom/tallybloom/internal/redistest"
	"github.com/tallybloom/tallybloom/mirror"
)

var sizesFlag = flag.String("sizes", "ci", `filter sizes: "ci" (tiny), "short" or "full"`)

// size is one filter size: its label, the capacity it is built for and the
// keys added before measuring. An Add into a fresh size starts from an
// empty filter; into the others, from the filled one. A cached size's
// filters fit the last-level cache and not the caches below it, so their
// times move with what other tenants of the machine do to that cache; its
// benchmarks measure the cache after their timing (reportCache). probes is
// how many keys a benchmark at the size cycles through.
type size struct {
	label          string
	capacity, fill uint64
	fresh, cached  bool
	probes         int
}

func sizes(b *testing.B) []size {
	switch *sizesFlag {
	case "ci":
		// Labelled by what they hold, so that a run of the default size
		// is not read as a 1M or 64M figure: the two sizes stand in for
		// those of the other modes.
		return []size{
			{label: "20K", capacity: 20_000, fill: 20_000, fresh: true, cached: true, probes: probeKeys},
			{label: "100K", capacity: 100_000, fill: 100_000, probes: probeKeys},
		}
	case "short":
		return []size{
			{label: "1M", capacity: 1_000_000, fill: 1_000_000, fresh: true, cached: true, probes: probeKeys},
			{label: "64M", capacity: 64_000_000, fill: 8_000_000, probes: farProbeKeys},
		}
	case "full":
		return []size{
			{label: "1M", capacity: 1_000_000, fill: 1_000_000, fresh: true, cached: true, probes: probeKeys},
			{label: "64M", capacity: 64_000_000, fill: 64_000_000, probes: farProbeKeys},
		}
	}
	b.Fatalf("unknown -sizes %q", *sizesFlag)
	return nil
}

// withCache is sizes with, before them, a filter of 20 000 keys that stays
// in the cache, for the workloads whose time in the cache the report
// quotes: what is left of a ratio once memory is out of it. In ci mode
// the first size is already that filter.
func withCache(b *testing.B) []size {
	if *sizesFlag == "ci" {
		return sizes(b)
	}
	return append([]size{{label: "20K", capacity: 20_000, fill: 20_000, fresh: true, probes: probeKeys}}, sizes(b)...)
}

// probeKeys is how many keys a benchmark cycles through at the sizes the
// cache holds, and how many non-members measure a false-positive rate.
const probeKeys = 1 << 16

// farProbeKeys is how many keys a benchmark cycles through at the size far
// larger than the cache. Cycled, keys find the lines their last pass
// brought into the cache: 65 536 keys touch 4 MiB of a filter that reads
// one line a key, which a 32 MiB last-level cache holds, and 29 MiB of
// bits-and-blooms', most of which it holds. 4M keys touch 256 MiB, so that
// a lookup at 64M goes to memory, as one among billions of keys does.
const farProbeKeys = 1 << 22

// addKeys is the set of keys the benchmarks add: Add and AddBatch into the
// filled filters, Remove, TestAndAdd and AddUntouched into filters of their
// own. One set for all keeps the keys few: 4M keys for each of these
// benchmarks would take about 250 MB more, and most of a second each to
// generate.
const addKeys = 3

// warmKeys is how many of its keys an Add into a filled filter adds before
// the timing: enough to store into every page of a 64M filter.
const warmKeys = 1 << 19

// filled caches filled subjects and generated keys across benchmarks and
// their runs: building a 64M filter takes seconds, and generating 4M keys
// most of one.
var filled = struct {
	sync.Mutex
	subjects map[string]Subject
	keys     map[[2]uint64][][]byte // by count and set
	probes   map[string][][]byte    // by size
	dir      string
	// removed is, for each subject BenchmarkRemove keeps, how many of its
	// keys a run has removed: the next run goes on from there.
	removed map[string]int
	// once names the benchmarks that run once however many runs -count
	// asks for (see BenchmarkAddUntouched).
	once map[string]bool
}{subjects: map[string]Subject{}, keys: map[[2]uint64][][]byte{}, probes: map[string][][]byte{}, removed: map[string]int{}, once: map[string]bool{}}

// keySet is Keys(n, set), generated once.
func keySet(n int, set uint64) [][]byte {
	filled.Lock()
	defer filled.Unlock()
	id := [2]uint64{uint64(n), set}
	if keys, ok := filled.keys[id]; ok {
		return keys
	}
	keys := Keys(n, set)
	filled.keys[id] = keys
	return keys
}

// members are the first n member keys.
func members(n uint64) [][]byte { return keySet(int(n), 1) }

// probes are the member keys a lookup at s cycles through: s.probes of
// the keys s's filters hold, spread over them (see every).
func probes(s size) [][]byte {
	held := members(s.fill)
	filled.Lock()
	defer filled.Unlock()
	if keys, ok := filled.probes[s.label]; ok {
		return keys
	}
	keys := every(held, min(s.probes, len(held)))
	filled.probes[s.label] = keys
	return keys
}

// filledSubject is lib built for s.capacity holding s.fill member keys.
func filledSubject(b *testing.B, lib string, s size) Subject {
	b.Helper()
	keys := members(s.fill)
	filled.Lock()
	defer filled.Unlock()
	name := lib + "/" + s.label
	if subject, ok := filled.subjects[name]; ok {
		return subject
	}
	subject := newSubject(b, lib, s.capacity)
	fill(b, subject, keys)
	filled.subjects[name] = subject
	return subject
}

// prefill builds the filled filters of libs at s that are not built yet
// (see buildKept), then waits for the kernel to write the new files back
// (settle, 3 to 4 s after the short mode's 64M filters), rather than let
// that write-back of gigabytes run under the benchmarks that follow. A
// benchmark that stores into these filters makes their pages dirty again
// before its timing (see BenchmarkAdd): the first store into a page written
// back faults.
func prefill(b *testing.B, s size, libs []string) {
	b.Helper()
	if buildKept(b, libs, s.capacity, members(s.fill), func(lib string) string { return lib + "/" + s.label }) > 0 {
		settle()
	}
}

// buildKept makes the filters of libs for capacity keys that are not kept yet
// under name(lib), adds keys to each and keeps it, as many at once as there
// are cores, and returns how many it made. Building them is setup, not
// timed, and at 64M it is most of the suite's: a run of one 64M benchmark
// of the short mode, which makes its keys, builds the nine 64M filters and
// waits for their write-back, took about 33 s on a two-core AMD EPYC, and
// 50 before fill populated tallybloom's.
func buildKept(b *testing.B, libs []string, capacity uint64, keys [][]byte, name func(lib string) string) int {
	b.Helper()
	filled.Lock()
	var todo []string
	for _, lib := range libs {
		if _, ok := filled.subjects[name(lib)]; !ok {
			todo = append(todo, lib)
		}
	}
	filled.Unlock()
	dir := benchDir(b)
	built := make([]Subject, len(todo))
	errs := make([]error, len(todo))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Go(func() {
			for i := range next {
				built[i], errs[i] = NewSubject(todo[i], capacity, dir)
				if errs[i] == nil {
					errs[i] = fillWith(built[i], keys)
				}
			}
		})
	}
	for i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()
	filled.Lock()
	defer filled.Unlock()
	for i, lib := range todo {
		if errs[i] != nil {
			b.Fatalf("building %s: %v", name(lib), errs[i])
		}
		filled.subjects[name(lib)] = built[i]
	}
	return len(todo)
}

// kept is the subject a benchmark's runs (-count) share, kept under name and
// built by build on the first run. Removing a 64M file that adds have
// written all over takes seconds on some file systems (ext4 mounted with
// discard took 9); kept, a subject's file is removed once, at the end.
func kept(name string, build func() Subject) (subject Subject, built bool) {
	filled.Lock()
	defer filled.Unlock()
	if subject, ok := filled.subjects[name]; ok {
		return subject, false
	}
	subject = build()
	filled.subjects[name] = subject
	return subject, true
}

// first reports whether this is the first run of the benchmark name.
func first(name string) bool {
	filled.Lock()
	defer filled.Unlock()
	if filled.once[name] {
		return false
	}
	filled.once[name] = true
	return true
}

// fill adds keys to subject, tallybloom's a batch at a time into a
// populated filter (Filter.Populate): building the 64M filters is most of
// the suite's setup, and a bulk load into a new filter is what Populate is
// for. Every page of a filled filter has been stored into either way.
func fill(b *testing.B, subject Subject, keys [][]byte) {
	if err := fillWith(subject, keys); err != nil {
		b.Fatal(err)
	}
}

// fillWith is fill, for any goroutine.
func fillWith(subject Subject, keys [][]byte) error {
	t, ok := subject.(*tally)
	if !ok {
		for _, k := range keys {
			subject.Add(k)
		}
		return nil
	}
	if err := t.f.Populate(); err != nil {
		return err
	}
	ids := make([]uint64, 1024)
	for i := range ids {
		ids[i] = tallyID
	}
	for len(keys) > 0 {
		n := min(len(ids), len(keys))
		if err := t.f.AddBatch(keys[:n], ids[:n]); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

func newSubject(b *testing.B, lib string, capacity uint64) Subject {
	b.Helper()
	subject, err := NewSubject(lib, capacity, benchDir(b))
	if err != nil {
		b.Fatal(err)
	}
	return subject
}

// benchDir is the directory of the suite's files, made on first use and
// removed by TestMain.
func benchDir(b *testing.B) string {
	b.Helper()
	if filled.dir == "" {
		dir, err := os.MkdirTemp("", "tallybloom-bench")
		if err != nil {
			b.Fatal(err)
		}
		filled.dir = dir
	}
	return filled.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, s := range filled.subjects {
		if c, ok := s.(io.Closer); ok {
			c.Close()
		}
	}
	if filled.dir != "" {
		os.RemoveAll(filled.dir)
	}
	os.Exit(code)
}

// every spreads n keys over keys, so lookups land all over the filter, and
// packs them: walked in order they are in the cache, as a key a service has
// just read from a request is.
func every(keys [][]byte, n int) [][]byte {
	out := make([][]byte, 0, n)
	for i := range n {
		out = append(out, keys[i*len(keys)/n])
	}
	return Packed(out)
}

// BenchmarkContains looks up members and non-members, and reports each
// filter's bytes per key and measured false-positive rate.
func BenchmarkContains(b *testing.B) {
	for _, s := range withCache(b) {
		nonMembers := keySet(s.probes, 2)
		for _, lib := range Libraries {
			for _, kind := range []string{"member", "non-member"} {
				b.Run(fmt.Sprintf("%s/%s/%s", s.label, lib, kind), func(b *testing.B) {
					// The first run at a size builds every library's
					// filter of it, before b.Loop starts the timing.
					prefill(b, s, Libraries)
					subject := filledSubject(b, lib, s)
					keys := nonMembers
					if kind == "member" {
						keys = probes(s)
					}
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						subject.Contains(keys[i%len(keys)])
						i++
					}
					b.ReportMetric(float64(subject.Bytes())*8/float64(s.capacity), "bits/key")
					b.ReportMetric(FalsePositiveRate(subject, nonMembers[:probeKeys]), "fpr")
					if t, ok := subject.(*tally); ok && lib == TallybloomLarge {
						reportLargePages(b, t.f)
					}
					if s.cached {
						reportCache(b)
					}
				})
			}
		}
	}
}

// BenchmarkContainsSideBySide looks up members at the size far larger than
// the cache in a tallybloom filter and in bits-and-blooms' alternately, a
// block of keys in one and the same block in the other, and reports each
// filter's time a lookup (tally-ns, peer-ns). Run one after the other, as
// BenchmarkContains runs them, the two are seconds apart, and what other
// tenants of the machine do to its memory in between moves their ratio:
// bits-and-blooms' lookup at 64M has measured from 255 to 426 ns in runs
// of the same build. Side by side, both see the same moments. Which goes
// first alternates from block to block.
func BenchmarkContainsSideBySide(b *testing.B) {
	s := sizes(b)[len(sizes(b))-1]
	for _, lib := range []string{Tallybloom, TallybloomFixed, TallybloomLarge, TallybloomCounters} {
		b.Run(s.label+"/"+lib, func(b *testing.B) {
			subjects := [2]Subject{filledSubject(b, lib, s), filledSubject(b, BitsAndBlooms, s)}
			keys := probes(s)
			var took [2]time.Duration
			b.ReportAllocs()
			at := 0
			for b.Loop() {
				block := keys[at : at+sideBlock]
				for j := range 2 {
					which := (at/sideBlock + j) & 1
					start := time.Now()
					for _, k := range block {
						subjects[which].Contains(k)
					}
					took[which] += time.Since(start)
				}
				if at += sideBlock; at+sideBlock > len(keys) {
					at = 0
				}
			}
			lookups := float64(b.N * sideBlock)
			b.ReportMetric(float64(took[0].Nanoseconds())/lookups, "tally-ns")
			b.ReportMetric(float64(took[1].Nanoseconds())/lookups, "peer-ns")
		})
	}
}

// sideBlock is how many keys BenchmarkContainsSideBySide looks up in one
// filter before it turns to the other: long enough (about three
// milliseconds at 64M) that reading the clock costs nothing that shows.
// Blocks of 1 024 keys measured about the same ratios, in one run.
const sideBlock = 1 << 14

// BenchmarkAdd adds keys to a filter built for the size, in the steady state
// of a service. The 20K and 1M filters start empty, their pages readied for
// stores before the timing (Filter.Populate), as those of a service's
// filter that has run a while, or was loaded in bulk, are: an add into an
// untouched page is BenchmarkAddUntouched's. (Until 2026-11-28 the first
// few thousand adds of a run stored into every page first, and their
// faults took 12 to 29% of an add's time at 1M on the AMD EPYC of family
// 26.) The 64M filters are the filled ones, whose pages the fill has
// touched. Before the first run at 64M, adding warmKeys of the keys stores
// into their pages again (see readyToStore).
func BenchmarkAdd(b *testing.B) {
	for _, s := range withCache(b) {
		keys := keySet(s.probes, addKeys)
		for _, lib := range Libraries {
			b.Run(fmt.Sprintf("%s/%s", s.label, lib), func(b *testing.B) {
				benchmarkAdd(b, addSubject(b, "add", lib, s, keys), keys)
				if s.cached {
					reportCache(b)
				}
			})
		}
	}
}

// addSubject is the filter of lib that the benchmark named bench adds keys
// to at s, as BenchmarkAdd describes: a new one at a fresh size, populated,
// removed after the benchmark, and the filled one, its pages stored into
// again, at the others.
func addSubject(b *testing.B, bench, lib string, s size, keys [][]byte) Subject {
	if s.fresh {
		subject := newSubject(b, lib, s.capacity)
		if c, ok := subject.(io.Closer); ok {
			b.Cleanup(func() { c.Close() })
		}
		if t, ok := subject.(*tally); ok {
			if err := t.f.Populate(); err != nil {
				b.Fatal(err)
			}
		}
		return subject
	}
	subject := filledSubject(b, lib, s)
	readyToStore(bench+"/"+s.label+"/"+lib, func() {
		for _, k := range keys[:min(warmKeys, len(keys))] {
			subject.Add(k)
		}
	})
	return subject
}

// readyToStore readies a filled filter for a benchmark that stores into it,
// before the benchmark's first run (named by name): it writes back what the
// benchmarks before stored (settle), and then warm stores into the pages
// the timing will. Linux writes a file's dirty pages back once the file has
// been dirty for 30 s, and every few seconds after while it stays dirty,
// and the next store into each page written back faults: in a 750 MB
// filter that took adds from 290 ns to 1.4 to 2.8 µs for seconds at a
// time, as the faults waited for the writing. A benchmark at 64M follows
// others that store into its filter for minutes, so its runs would meet
// that writing at random (TestAndAddNew at 64M took 2.4 µs in one short
// report, against 0.3 in the others). Written back first, the file is
// dirty again only from warm on, and the timed runs that follow within
// seconds store into dirty pages, for every library alike: the steady
// state between two writebacks. What a writeback costs a service that
// changes its filter all the time is in docs/PERFORMANCE.md (Flush); the
// benchmarks that store report their faults (faults/op), and the report
// names a row whose timing met them.
func readyToStore(name string, warm func()) {
	if first("ready-to-store/" + name) {
		settle()
		warm()
	}
}

// BenchmarkAddBatch adds the keys BenchmarkAdd adds, 1024 a call, with
// tallybloom's AddBatch: it takes the writer's lock once a call and asks
// for a group's blocks before it changes any. The peers have no batch add;
// their Add is the comparison. ns/key is the time an add.
func BenchmarkAddBatch(b *testing.B) {
	for _, s := range sizes(b) {
		keys := keySet(s.probes, addKeys)
		for _, lib := range []string{Tallybloom, TallybloomFixed} {
			b.Run(s.label+"/"+lib, func(b *testing.B) {
				f := addSubject(b, "addbatch", lib, s, keys).(*tally).f
				ids := slices.Repeat([]uint64{tallyID}, 1024)
				b.ReportAllocs()
				c := faults.Start()
				i := 0
				for b.Loop() {
					start := i * 1024 % (len(keys) - 1024)
					if err := f.AddBatch(keys[start:start+1024], ids); err != nil {
						b.Fatal(err)
					}
					i++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/key")
				c.Report(b, b.N*1024, "key")
				if s.cached {
					reportCache(b)
				}
			})
		}
	}
}

// BenchmarkAddUntouched adds keys to an empty filter built for the larger
// size, where early in a run nearly every add is the first store into its
// page: what a new filter's adds cost until its pages are touched. Into a
// file each such store faults its page in; with LargePages the page is
// 2 MiB, allocated and zeroed whole, which is left out.
//
// It runs once, whatever -count asks: a run makes a new 64M file and removes
// it, and removing a file whose pages a run has written took 3 to 4 seconds
// on ext4 here, far longer than the run. The runs -count adds are skipped.
func BenchmarkAddUntouched(b *testing.B) {
	s := sizes(b)[len(sizes(b))-1]
	keys := keySet(s.probes, addKeys)
	for _, lib := range []string{TallybloomFixed, TallybloomCounters, BitsAndBlooms} {
		b.Run(s.label+"/"+lib, func(b *testing.B) {
			if !first("AddUntouched/" + s.label + "/" + lib) {
				b.Skip("measured once (see BenchmarkAddUntouched)")
			}
			subject := newSubject(b, lib, s.capacity)
			if t, ok := subject.(*tally); ok {
				defer t.Close()
			}
			benchmarkAdd(b, subject, keys)
		})
	}
}

func benchmarkAdd(b *testing.B, subject Subject, keys [][]byte) {
	b.ReportAllocs()
	c := faults.Start()
	i := 0
	for b.Loop() {
		subject.Add(keys[i%len(keys)])
		i++
	}
	c.Report(b, b.N, "op")
}

// withDablooms is libs, and dablooms where this build measures it.
func withDablooms(libs ...string) []string {
	if slices.Contains(Libraries, Dablooms) {
		libs = append(libs, Dablooms)
	}
	return libs
}

// removers are the libraries measured that remove keys.
func removers() []string { return withDablooms(Tallybloom, BoomCounting) }

// BenchmarkRemove removes keys added before the timing from a filter built
// for the size, for the filters that can remove. When every key is removed,
// they are added again with the timer stopped. The runs share one filter,
// each going on where the one before stopped.
func BenchmarkRemove(b *testing.B) {
	for _, s := range sizes(b) {
		keys := keySet(s.probes, addKeys)
		removeName := func(lib string) string { return fmt.Sprintf("remove/%s/%s", s.label, lib) }
		for _, lib := range removers() {
			name := removeName(lib)
			b.Run(fmt.Sprintf("%s/%s", s.label, lib), func(b *testing.B) {
				// The first run at a size builds every remover's filter of
				// it, just before the timing and not synced: their pages
				// are dirty, and the runs, seconds later, come before the
				// kernel writes them back (see readyToStore).
				buildKept(b, removers(), s.capacity, keys, removeName)
				filled.Lock()
				subject := filled.subjects[name].(Remover)
				filled.Unlock()
				// keys[:i] are removed, the rest held.
				i := filled.removed[name]
				defer func() { filled.removed[name] = i }()
				b.ReportAllocs()
				c := faults.Start()
				defer c.Report(b, b.N, "op")
				for b.Loop() {
					if !subject.Remove(keys[i]) {
						b.Fatal("a key added was not removed")
					}
					if i++; i == len(keys) {
						b.StopTimer()
						for _, k := range keys {
							subject.Add(k)
						}
						b.StartTimer()
						i = 0
					}
				}
			})
		}
	}
}

// testAndAdders are the libraries the TestAndAdd benchmarks measure: the
// ones with a test-and-add of their own, and dablooms, whose user looks a
// key up and adds it if it is missing.
func testAndAdders() []string { return withDablooms(Tallybloom, BoomCounting, BitsAndBlooms) }

// BenchmarkTestAndAdd is the deduplicator's step for keys the filter holds,
// a lookup that hits. At the fresh size the filter is new and one pass over
// the keys before the first run's timing adds them, so the timing sees
// keys already seen and no first store into an untouched page; the runs
// share that filter. At the size far larger than the cache it is the filled
// filter and the keys are those a member lookup cycles through.
func BenchmarkTestAndAdd(b *testing.B) {
	for _, s := range sizes(b) {
		for _, lib := range testAndAdders() {
			b.Run(s.label+"/"+lib, func(b *testing.B) {
				var subject Subject
				var keys [][]byte
				if s.fresh {
					keys = keySet(s.probes, addKeys)
					var built bool
					subject, built = kept("testandadd/"+s.label+"/"+lib, func() Subject { return newSubject(b, lib, s.capacity) })
					if built {
						fill(b, subject, keys)
					}
				} else {
					prefill(b, s, Libraries)
					subject, keys = filledSubject(b, lib, s), probes(s)
				}
				testAndAdd := testAndAddOf(subject)
				b.ReportAllocs()
				c := faults.Start()
				i := 0
				for b.Loop() {
					testAndAdd(keys[i])
					if i++; i == len(keys) {
						i = 0
					}
				}
				c.Report(b, b.N, "op")
			})
		}
	}
}

// BenchmarkTestAndAddNew is the deduplicator's step for keys the filter has
// not seen, a lookup that misses and then an add, into the filter the
// size's adds go into (empty at 1M, filled at 64M). Before each pass over
// the pool its keys are made new (their first eight bytes, a set no other
// benchmark uses); after it, with the timer stopped, the filter is put back
// as it was: tallybloom, BoomFilters' counting filter and dablooms remove
// the keys they added, and bits-and-blooms, which cannot remove, works on a
// copy whose bits are put back from the filter. Every pass sees the same
// filter, and the benchmarks after this one find theirs unchanged.
func BenchmarkTestAndAddNew(b *testing.B) {
	pool := Keys(probeKeys, 9)
	for _, s := range sizes(b) {
		for _, lib := range testAndAdders() {
			b.Run(s.label+"/"+lib, func(b *testing.B) {
				var subject Subject
				if s.fresh {
					subject, _ = kept("testandaddnew/"+s.label+"/"+lib, func() Subject { return newSubject(b, lib, s.capacity) })
				} else {
					subject = filledSubject(b, lib, s)
				}
				testAndAdd, undo, _ := newKeySteps(subject)
				added := make([]bool, len(pool))
				pass := uint64(0)
				renew := func() {
					pass++
					for _, k := range pool {
						binary.LittleEndian.PutUint64(k, newKeysSet+pass)
					}
				}
				renew()
				// Passes before the first run store into the pages the
				// timing will (see readyToStore): in the new filter at the
				// fresh size, the first store into each page.
				readyToStore("testandaddnew/"+s.label+"/"+lib, func() {
					for range warmPasses {
						for j, k := range pool {
							added[j] = testAndAdd(k)
						}
						undo(pool, added)
						renew()
					}
				})
				b.ReportAllocs()
				c := faults.Start()
				i := 0
				for b.Loop() {
					added[i] = testAndAdd(pool[i])
					if i++; i == len(pool) {
						b.StopTimer()
						undo(pool, added)
						renew()
						b.StartTimer()
						i = 0
					}
				}
				c.Report(b, b.N, "op")
				undo(pool[:i], added[:i])
			})
		}
	}
}

// warmPasses of new keys before the timing store into nearly every page of
// a 64M filter.
const warmPasses = 8

// newKeysSet is above every set of Keys the benchmarks ask for.
const newKeysSet = 1 << 40

// testAndAddOf is subject's test-and-add, which reports whether it added
// the key. BoomFilters' counting filter and bits-and-blooms add a key
// whether or not it was present.
func testAndAddOf(subject Subject) func([]byte) bool {
	switch s := subject.(type) {
	case *tally:
		return func(k []byte) bool {
			present, err := s.f.TestAndAdd(k, tallyID)
			return err == nil && !present
		}
	case *boomCounting:
		return func(k []byte) bool { s.f.TestAndAdd(k); return true }
	case *bnb:
		return func(k []byte) bool { s.f.TestAndAdd(k); return true }
	}
	return func(k []byte) bool {
		if subject.Contains(k) {
			return false
		}
		subject.Add(k)
		return true
	}
}

// newKeySteps are subject's test-and-add (see testAndAddOf), the undo of
// the adds of a pass (keys[i] was added where added[i]), and the lookup of
// the filter they work on.
func newKeySteps(subject Subject) (testAndAdd func([]byte) bool, undo func(keys [][]byte, added []bool), contains func([]byte) bool) {
	testAndAdd, contains = testAndAddOf(subject), subject.Contains
	switch s := subject.(type) {
	case *boomCounting:
		// It added every key, present or not.
		undo = func(keys [][]byte, _ []bool) {
			for _, k := range keys {
				s.f.TestAndRemove(k)
			}
		}
	case *bnb:
		work := &bnb{f: s.f.Copy()}
		testAndAdd, contains = testAndAddOf(work), work.Contains
		undo = func([][]byte, []bool) {
			work.f.ClearAll()
			if err := work.f.Merge(s.f); err != nil {
				panic(err)
			}
		}
	case Remover:
		undo = func(keys [][]byte, added []bool) {
			for i, k := range keys {
				if added[i] && !s.Remove(k) {
					panic(fmt.Sprintf("bench: a key %T added was not removed", subject))
				}
			}
		}
	default:
		panic(fmt.Sprintf("bench: no undo of test-and-add for %T", subject))
	}
	return testAndAdd, undo, contains
}

// BenchmarkChain looks up non-members in chains of 1, 5 and 10 full
// sub-filters: the cost of scaling.
func BenchmarkChain(b *testing.B) {
	// What the benchmarks before this one stored into the filled filters
	// is written back first (settle): about 2 GB of pages in the short
	// mode, from Add, Remove and TestAndAdd at 64M. The kernel writes a
	// file's dirty pages back 30 s or more after it dirtied them, and in a
	// logged run it wrote these back during Chain's first runs, taking a
	// core and the memory bus from the lookups timed then. ContainsBatch
	// and ContainsParallel, run alone or after this, settle too; with
	// nothing dirty a settle returns at once.
	settle()
	perSub := sizes(b)[0].capacity / 10
	nonMembers := Keys(probeKeys, 6)
	for _, subs := range []int{1, 5, 10} {
		for _, lib := range withDablooms(Tallybloom, TallybloomLarge, BoomScalable) {
			b.Run(fmt.Sprintf("subs=%d/%s", subs, lib), func(b *testing.B) {
				subject := chain(b, lib, subs, perSub)
				if c, ok := subject.(io.Closer); ok {
					defer c.Close()
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					subject.Contains(nonMembers[i%len(nonMembers)])
					i++
				}
				reportCache(b)
			})
		}
	}
}

// idRouted is a filter that adds a key to the sub-filter its id belongs
// to, and opens a new one for an id above every one it has seen once the
// newest is full, as tallybloom does: dablooms.
type idRouted interface {
	Subject
	addID(key []byte, id uint64)
	subFilters() int
}

// chain is lib's filter of subs full sub-filters of perSub keys each.
func chain(b *testing.B, lib string, subs int, perSub uint64) Subject {
	switch lib {
	case Tallybloom, TallybloomLarge:
		f, err := engine.Create(filepath.Join(b.TempDir(), "chain.tb"), engine.Config{Capacity: perSub, ErrorRate: ErrorRate, Growth: 1, Seed: 1},
			&engine.Options{LargePages: lib == TallybloomLarge})
		if err != nil {
			b.Fatal(err)
		}
		// With growth 1 every sub-filter takes perSub keys, and the add
		// after that opens the next.
		for id := range uint64(subs) * perSub {
			_ = f.Add(chainKey(id), id)
		}
		if st := f.Stats(); len(st.SubFilters) != subs || st.Count != uint64(subs)*perSub {
			f.Close()
			b.Fatalf("%d sub-filters holding %d keys, want %d full", len(st.SubFilters), st.Count, subs)
		}
		return &tally{f: f}
	case BoomScalable:
		// BoomFilters grows by its own rule: add until it has the
		// sub-filters asked for.
		boomSub := newSubject(b, BoomScalable, perSub).(*boomScalable)
		for id := uint64(0); boomFilters(boomSub) < subs; id++ {
			boomSub.Add(chainKey(id))
		}
		return boomSub
	}
	// dablooms fills a sub-filter of capacity c with c-1 keys: given one
	// more, each of its sub-filters takes perSub keys, as tallybloom's do.
	routed, ok := newSubject(b, lib, perSub+1).(idRouted)
	if !ok {
		b.Fatalf("bench: %s does not route keys by id", lib)
	}
	for id := range uint64(subs) * perSub {
		routed.addID(chainKey(id), id)
	}
	if got := routed.subFilters(); got != subs {
		b.Fatalf("%s has %d sub-filters, want %d", lib, got, subs)
	}
	return routed
}

// chainKeys fill the chains: generated a chunk at a time and kept, since
// every run of every chain benchmark adds the same ones.
var chainKeys [][]byte

// chainKey is key id of the keys that fill the chains.
func chainKey(id uint64) []byte {
	const chunk = 1 << 16
	for uint64(len(chainKeys)) <= id {
		chainKeys = append(chainKeys, Keys(chunk, 100+uint64(len(chainKeys))/chunk)...)
	}
	return chainKeys[id]
}

// BenchmarkContainsBatch compares a batch of 1024 lookups with single calls
// on the largest filter.
func BenchmarkContainsBatch(b *testing.B) {
	settle() // as in BenchmarkChain
	s := sizes(b)[len(sizes(b))-1]
	keys := probes(s)
	for _, lib := range []string{Tallybloom, TallybloomLarge} {
		b.Run(s.label+"/"+lib, func(b *testing.B) { benchmarkContainsBatch(b, filledSubject(b, lib, s).(*tally), keys) })
	}
}

func benchmarkContainsBatch(b *testing.B, f *tally, keys [][]byte) {
	b.Run("single", func(b *testing.B) {
		i := 0
		for b.Loop() {
			for range 1024 {
				f.f.Contains(keys[i%len(keys)])
				i++
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/key")
	})
	b.Run("batch", func(b *testing.B) {
		out := make([]bool, 0, 1024)
		i := 0
		for b.Loop() {
			start := (i * 1024) % (len(keys) - 1024)
			out = f.f.ContainsBatch(keys[start:start+1024], out)
			i++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/key")
	})
}

// BenchmarkContainsParallel runs lookups from one core and from all.
func BenchmarkContainsParallel(b *testing.B) {
	settle() // as in BenchmarkChain
	s := sizes(b)[0]
	keys := probes(s)
	for _, lib := range []string{Tallybloom, BitsAndBlooms} {
		for _, procs := range []int{1, runtime.NumCPU()} {
			b.Run(fmt.Sprintf("%s/%s/procs=%d", s.label, lib, procs), func(b *testing.B) {
				subject := filledSubject(b, lib, s)
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				// RunParallel has no b.Loop to keep the fill and the
				// cache probe out of the timing, so the timer runs around
				// it alone. Timed, the probe (about 50 ms) added a fifth
				// to every run's ns/op and, as a run's time sets the next
				// run's b.N, took a dozen runs to reach the benchtime
				// instead of five: 38 s of the short report.
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						subject.Contains(keys[i%len(keys)])
						i++
					}
				})
				b.StopTimer()
				if finalRound(b) {
					reportCache(b)
				}
			})
		}
	}
}

// BenchmarkOpen opens tallybloom files of 1 MiB and 4 GiB of counters.
func BenchmarkOpen(b *testing.B) {
	for _, c := range []struct {
		label    string
		capacity uint64
	}{{"1MiB", 110_000}, {"4GiB", 460_000_000}} {
		b.Run(c.label, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "open.tb")
			f, err := engine.Create(path, engine.Config{Capacity: c.capacity, ErrorRate: ErrorRate, Growth: 1, Seed: 1}, nil)
			if err != nil {
				b.Skipf("no room for %s: %v", c.label, err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				g, err := engine.Open(path, nil)
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

// BenchmarkMirrorShip adds keys to a filter mirrored to a local Redis and
// waits until Redis holds them all: the time per op is the time per change
// shipped.
func BenchmarkMirrorShip(b *testing.B) {
	r, err := mirror.Dial(redistest.StartServer(b).URL())
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	f, err := engine.Create(filepath.Join(b.TempDir(), "ship.tb"), engine.Config{Capacity: uint64(max(b.N, 1000)), ErrorRate: ErrorRate, Seed: 1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	m, err := mirror.Attach(f, r, "ship", &mirror.Options{MaxQueue: max(b.N, 1000) + 1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	keys := Keys(probeKeys, 7)
	ctx := context.Background()
	if err := m.Flush(ctx); err != nil { // the first full copy
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		_ = f.Add(keys[i%len(keys)], 1)
	}
	if err := m.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer() // not the deferred closes
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "changes/s")
	if m.Stats().Recopies > 1 {
		b.Fatalf("%d full copies: the queue overflowed", m.Stats().Recopies)
	}
}

// BenchmarkRemoteCheck checks keys against a copy in a local Redis, 1000
// keys a round trip, from one process.
func BenchmarkRemoteCheck(b *testing.B) {
	s := sizes(b)[0]
	r, err := mirror.Dial(redistest.StartServer(b).URL())
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	f := filledSubject(b, Tallybloom, s).(*tally)
	ctx := context.Background()
	if _, err := mirror.Push(ctx, f.f, r, "remote", nil); err != nil {
		b.Fatal(err)
	}
	c, err := mirror.NewChecker(ctx, r, "remote")
	if err != nil {
		b.Fatal(err)
	}
	keys := probes(s)
	var out []bool
	i := 0
	for b.Loop() {
		start := (i * 1000) % (len(keys) - 1000)
		if out, err = c.ContainsBatch(ctx, keys[start:start+1000], out); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "keys/s")
}

// BenchmarkMemoryLatency chases pointers through a random cycle over
// buffers of growing size: one dependent load per op, so ns/op is this
// machine's load latency at that working-set size. The report uses it to
// say where a filter stops fitting in the cache.
func BenchmarkMemoryLatency(b *testing.B) {
	for _, mib := range []int{1, 4, 8, 64} {
		b.Run(fmt.Sprintf("MiB=%d", mib), func(b *testing.B) {
			c := newCycle(mib)
			at := uint32(0)
			for b.Loop() {
				at = c[at]
			}
			sink = at
		})
	}
}

// cycle is a random cycle through a buffer, one entry per 64-byte line:
// following it is one dependent load a step.
type cycle []uint32

func newCycle(mib int) cycle {
	lines := mib << 20 / 64
	next := make(cycle, lines*16)
	order := rand.New(rand.NewPCG(uint64(mib), 1)).Perm(lines)
	for i, line := range order {
		next[line*16] = uint32(order[(i+1)%lines] * 16)
	}
	return next
}

// follow takes steps steps from the start and returns where it ends.
func (c cycle) follow(steps int) uint32 {
	at := uint32(0)
	for range steps {
		at = c[at]
	}
	return at
}

// probeCycle is the 8 MiB cycle reportCache follows.
var probeCycle = sync.OnceValue(func() cycle { return newCycle(8) })

// reportCache measures, after a benchmark's timing, a dependent load within
// 8 MiB and reports it as cache-ns: on a quiet machine whose last-level
// cache holds 8 MiB it is a few tens of ns, and near a load from memory
// when other tenants of the machine hold the cache. The benchmarks whose
// filters the cache would hold call it, so that the report can say in
// which of their runs it did not.
func reportCache(b *testing.B) {
	c := probeCycle()
	// Three times round first: a last-level cache that takes lines as the
	// caches below it let them go need not keep a line met once. On a quiet
	// AMD EPYC, one time round left the probe at 47 to 169 ns after a 1M
	// benchmark, where three leave it at 17 to 39, as BenchmarkMemoryLatency
	// measures.
	c.follow(3 * len(c) / 16)
	const steps = 1 << 15
	start := time.Now()
	sink = c.follow(steps)
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/steps, "cache-ns")
}

var sink uint32

// finalRound reports whether this call of a benchmark without b.Loop is its
// last of a run: go test calls such a benchmark with a growing b.N until a
// call's timing reaches -benchtime, and reports the metrics of that call
// alone. Probing the cache in the calls before it (about 65 ms each on a
// busy machine, five or more calls a run) only made the run longer. With
// -benchtime Nx there is one call.
func finalRound(b *testing.B) bool {
	benchtime, err := time.ParseDuration(flag.Lookup("test.benchtime").Value.String())
	return err != nil || b.Elapsed() >= benchtime
}

func TestFinalRoundIsTheCallWhoseMetricsAreReported(t *testing.T) {
	benchtime := flag.Lookup("test.benchtime")
	was := benchtime.Value.String()
	if err := benchtime.Value.Set("20ms"); err != nil {
		t.Fatal(err)
	}
	defer benchtime.Value.Set(was)
	calls, finals := 0, 0
	r := testing.Benchmark(func(b *testing.B) {
		calls++
		b.RunParallel(func(pb *testing.PB) {
			for n := 0; pb.Next(); n++ {
			}
		})
		if finalRound(b) {
			finals++
			b.ReportMetric(float64(calls), "call")
		}
	})
	if calls < 2 || finals != 1 {
		t.Fatalf("%d calls, %d of them final; want several, one final", calls, finals)
	}
	if got := r.Extra["call"]; got != float64(calls) {
		t.Fatalf("the metric reported is call %v's, want the last call's, %d", got, calls)
	}
}

// reportLargePages reports the share of f's counters and presence bits the
// kernel maps with 2 MiB pages (large-share): whether Options.LargePages
// took on this machine, which decides what its rows measure.
func reportLargePages(b *testing.B, f *engine.Filter) {
	large, err := f.LargePageBytes()
	if err != nil {
		b.Fatal(err)
	}
	st := f.Stats()
	b.ReportMetric(float64(large)/float64(st.CounterBytes+st.PresenceBytes), "large-share")
}

// BenchmarkMemoryParallel loads sixteen random lines of a buffer far larger
// than the cache per op, every address known in advance: ns/load is what
// this machine reaches when misses overlap, the bound for ContainsBatch.
func BenchmarkMemoryParallel(b *testing.B) {
	const mib, group = 512, 16
	words := make([]uint64, mib<<20/8)
	for i := range words {
		words[i] = uint64(i)
	}
	at := make([]uint32, 1<<16)
	rng := rand.New(rand.NewPCG(mib, 2))
	for i := range at {
		at[i] = uint32(rng.IntN(len(words)))
	}
	b.Run(fmt.Sprintf("MiB=%d", mib), func(b *testing.B) {
		var sum uint64
		i := 0
		for b.Loop() {
			for j := range group {
				sum += words[at[(i+j)%len(at)]]
			}
			i += group
		}
		sink = uint32(sum)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*group), "ns/load")
	})
}
