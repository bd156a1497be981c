package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchfmt"
)

// benchOutput is go test's output for the named benchmarks, runs times
// each, with ns/op and any other metric given.
func benchOutput(runs int, rows map[string]map[string][]float64) string {
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: github.com/tallybloom/tallybloom/bench\n")
	for name, metrics := range rows {
		for i := range runs {
			fmt.Fprintf(&b, "Benchmark%s-2 \t 1000000\t", name)
			for metric, vs := range metrics {
				fmt.Fprintf(&b, " %g %s", vs[i], metric)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("PASS\nok  \tgithub.com/tallybloom/tallybloom/bench\t1.0s\n")
	return b.String()
}

func TestParseKeepsEveryRunOfEveryMetric(t *testing.T) {
	out := "BenchmarkContains/1M/tallybloom/member-2   \t 5000000\t 65.5 ns/op\t 53.7 bits/key\t 0.0102 fpr\t 0 B/op\t 0 allocs/op\n" +
		"BenchmarkContains/1M/tallybloom/member-2   \t 5000000\t 70.1 ns/op\t 53.7 bits/key\t 0.0102 fpr\t 0 B/op\t 0 allocs/op\n" +
		"BenchmarkOpen/4GiB \t 100\t 9000 ns/op\n" +
		"not a benchmark line\n"
	r := parse(out)
	require.Len(t, r, 2)
	require.Equal(t, []float64{65.5, 70.1}, r["Contains/1M/tallybloom/member"]["ns/op"])
	require.Equal(t, []float64{0.0102, 0.0102}, r["Contains/1M/tallybloom/member"]["fpr"])
	require.Equal(t, []float64{9000}, r["Open/4GiB"]["ns/op"], "a name without the -procs suffix")
}

// A benchmark that skips its run (AddUntouched measures once, whatever
// -count asks) still prints a line, of no iterations and NaN ns/op.
func TestParseLeavesOutRunsThatMeasuredNothing(t *testing.T) {
	out := "BenchmarkAddUntouched/64M/tallybloom-fixed-2 \t 16124\t 16877 ns/op\t 0 B/op\t 0 allocs/op\n" +
		"BenchmarkAddUntouched/64M/tallybloom-fixed-2 \t 0\t NaN ns/op\t 0 B/op\t 0 allocs/op\n" +
		"BenchmarkAddUntouched/64M/tallybloom-fixed-2 \t 0\t NaN ns/op\t 0 B/op\t 0 allocs/op\n"
	r := parse(out)
	require.Equal(t, []float64{16877}, r["AddUntouched/64M/tallybloom-fixed"]["ns/op"])
	require.Equal(t, []float64{0}, r["AddUntouched/64M/tallybloom-fixed"]["allocs/op"])
	require.Equal(t, 16877.0, get(r, "AddUntouched/64M/tallybloom-fixed", "ns/op"))
}

// What go test prints under a benchmark's name, a skip's reason among
// it, is collected by benchmark, each message once, without the file and
// line it came from.
func TestLoggedCollectsWhatABenchmarkPrinted(t *testing.T) {
	out := "BenchmarkOpen/1MiB-2 \t 20000\t 41000 ns/op\n" +
		"BenchmarkOpen/4GiB-2 \t 0\t NaN ns/op\n" +
		"--- SKIP: BenchmarkOpen/4GiB-2\n" +
		"    bench_test.go:915: no room for 4GiB: no space left on device\n" +
		"BenchmarkOpen/4GiB-2 \t 0\t NaN ns/op\n" +
		"--- BENCH: BenchmarkOpen/4GiB-2\n" +
		"    bench_test.go:915: no room for 4GiB: no space left on device\n" +
		"    a line of its own\n" +
		"BenchmarkMirrorShip-2 \t 100\t 9000 ns/op\n" +
		"PASS\n"
	require.Equal(t, map[string][]string{
		"Open/4GiB": {"no room for 4GiB: no space left on device", "a line of its own"},
	}, logged(out))
}

func TestPairDividesRunByRun(t *testing.T) {
	s := pair([]float64{100, 300, 200}, []float64{100, 100, 100})
	require.Equal(t, spread{median: 2, lo: 1, hi: 3, runs: 3}, s)
	require.True(t, math.IsNaN(pair([]float64{1}, nil).median), "runs that do not pair up give no ratio")
}

func TestTargetJudgesTheMedian(t *testing.T) {
	require.True(t, target{ratio: spread{median: 1.5}, atMost: 1.5}.met())
	require.False(t, target{ratio: spread{median: 1.51}, atMost: 1.5}.met())
	require.True(t, target{ratio: spread{median: 4}, atLeast: 4}.met())
	require.False(t, target{ratio: spread{median: 3.9}, atLeast: 4}.met())
	require.False(t, target{ratio: spread{median: math.NaN()}, atLeast: 4}.met(), "a target not measured is not met")
}

func TestARatioNearItsLimitIsShownCloseEnoughToAgreeWithItsVerdict(t *testing.T) {
	over := target{ratio: spread{median: 0.7004}, atMost: 0.7}
	require.False(t, over.met())
	require.Equal(t, "0.7004", over.shown(), "0.70x beside missed would contradict it")
	require.Equal(t, "0.70", target{ratio: spread{median: 0.7}, atMost: 0.7}.shown())
	require.Equal(t, "0.70", target{ratio: spread{median: 0.6996}, atMost: 0.7}.shown(), "met, and 0.70 says so")
	require.Equal(t, "0.69", target{ratio: spread{median: 0.6912}, atMost: 0.7}.shown())
	require.Equal(t, "1.497", target{ratio: spread{median: 1.4973}, atLeast: 1.5}.shown())
	require.Equal(t, "2.30", target{ratio: spread{median: 2.3}, atLeast: 1.5}.shown())
	require.Equal(t, "NaN", target{ratio: spread{median: math.NaN()}, atLeast: 1.5}.shown())
}

func TestReportSaysPlainlyWhichTargetsAreMissedAndWhyOnce(t *testing.T) {
	ns := func(vs ...float64) map[string][]float64 { return map[string][]float64{"ns/op": vs} }
	withBits := func(m map[string][]float64, bits float64) map[string][]float64 {
		m["bits/key"] = []float64{bits, bits, bits}
		return m
	}
	r := parse(benchOutput(3, map[string]map[string][]float64{
		// Contains at 1M fixed: 0.5x bits-and-blooms, met.
		"Contains/1M/tallybloom-fixed/member":    withBits(ns(50, 50, 50), 53.7),
		"Contains/1M/tallybloom/member":          withBits(ns(60, 60, 60), 93.5),
		"Contains/1M/tallybloom-counters/member": withBits(ns(90, 90, 90), 43),
		"Contains/1M/bits-and-blooms/member":     ns(100, 100, 100),
		"Contains/1M/boom-counting/member":       ns(100, 100, 100),
		"Add/1M/tallybloom-fixed":                ns(200, 200, 200),
		"Add/1M/bits-and-blooms":                 ns(100, 100, 100),
		"Add/1M/boom-counting":                   ns(100, 100, 100),
		"Contains/20K/tallybloom-fixed/member":   ns(40, 40, 40),
		"AddBatch/1M/tallybloom-fixed":           {"ns/op": {153600, 153600, 153600}, "ns/key": {150, 150, 150}},
	}))
	report := write(r, nil, runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", took: time.Minute}, "results.svg")

	row := func(what, as string) string {
		for l := range strings.SplitSeq(report, "\n") {
			if strings.HasPrefix(l, "| "+what+" | "+as+" |") {
				return l
			}
		}
		t.Fatalf("no row for %s, %s in:\n%s", what, as, report)
		return ""
	}
	require.Contains(t, row("Contains, 1M, 1 sub-filter, vs bits-and-blooms Test", asFixed), "| 0.50x | 0.50-0.50x | at most 1x | met |")
	require.Contains(t, row("Add, 1M, vs bits-and-blooms Add", asFixed), "| 2.00x | 2.00-2.00x | at most 1.5x | **missed** |")
	require.Contains(t, row("bits per key vs 4 x 1.44 x log2(1/p), p = 1%", asCounters), "| 1.12x | 1.12-1.12x | at most 1.25x | met |")
	require.Contains(t, row("bits per key vs 4 x 1.44 x log2(1/p), p = 1%", asFixed), "| 1.40x | 1.40-1.40x | at most 1.25x | **missed** |")
	require.Contains(t, row("Add vs BoomFilters counting (speed-up)", asFixed), "| 0.50x | 0.50-0.50x | at least 4x | **missed** |")
	require.Contains(t, row("Contains vs BoomFilters counting (speed-up)", asFixed), "| 2.00x | 2.00-2.00x | at least 4x | **missed** |")
	require.Contains(t, row("Open, 4 GiB vs 1 MiB", asDefault), "|  |  | at most 2x | **not measured** |",
		"a target with no measurement is not met, and says why")

	_, reasons, ok := strings.Cut(report, "Why the targets not met are missed:")
	require.True(t, ok, "the report explains its missed targets")
	reasons, _, _ = strings.Cut(reasons, "\n## ")
	require.Equal(t, 1, strings.Count(reasons, "BoomFilters' counting filter at 1M keys takes 4.8 MB"),
		"one reason shared by two targets is given once")
	require.Contains(t, reasons, "- Add vs BoomFilters counting (speed-up); Contains vs BoomFilters counting (speed-up): BoomFilters' counting filter")
	require.Equal(t, 1, strings.Count(reasons, "presence bits add one bit to every four of counters"),
		"the two bits per key targets share their reason")
	require.NotContains(t, reasons, "- Contains, 1M, 1 sub-filter", "a met target needs no reason")
	require.Contains(t, reasons, "AddBatch, which takes the lock once a batch and asks for a group's blocks together) takes 150 ns a key at 1M fixed, 1.50x bits-and-blooms' Add.",
		"the Add reason says how far batches go")
	require.NotContains(t, reasons, "memory latency rows", "no latency rows measured, none quoted")
	require.Regexp(t, `\n- [^\n]*Open, 4 GiB vs 1 MiB[^\n]*: this run has no measurement for it`, reasons)
	require.NotContains(t, reasons, "whatever the file's size", "an unmeasured target's usual reason would quote no figures")
}

func TestEverythingElseComparesWithBitsAndBlooms(t *testing.T) {
	r := parse(benchOutput(1, map[string]map[string][]float64{
		"TestAndAddNew/1M/tallybloom":      {"ns/op": {300}},
		"TestAndAddNew/1M/bits-and-blooms": {"ns/op": {100}},
		"Remove/1M/tallybloom":             {"ns/op": {250}},
		"Open/4GiB":                        {"ns/op": {50000}},
	}))
	require.InDelta(t, 3, vsBitsAndBlooms(r, "TestAndAddNew/1M/tallybloom"), 1e-9)
	require.InDelta(t, 1, vsBitsAndBlooms(r, "TestAndAddNew/1M/bits-and-blooms"), 1e-9)
	require.True(t, math.IsNaN(vsBitsAndBlooms(r, "Remove/1M/tallybloom")), "bits-and-blooms does not remove")
	require.True(t, math.IsNaN(vsBitsAndBlooms(r, "Open/4GiB")), "no library in the name")

	report := write(r, nil, runInfo{h: testHost, mode: "short", count: 1, benchtime: "250ms", took: time.Minute}, "results.svg")
	require.Contains(t, report, "| TestAndAddNew/1M/tallybloom | 300.0 | 3.00x | ")
	require.Contains(t, report, "| Remove/1M/tallybloom | 250.0 |  | ")
}

var testHost = host{about: "a test machine.", llc: 32 << 20}

func TestReportSaysWhenOtherTenantsHeldTheCache(t *testing.T) {
	latency := func(in8, in64 []float64) map[string]result {
		return parse(benchOutput(len(in8), map[string]map[string][]float64{
			"MemoryLatency/MiB=8":  {"ns/op": in8},
			"MemoryLatency/MiB=64": {"ns/op": in64},
		}))
	}
	quiet := latency([]float64{24, 26, 25}, []float64{160, 165, 170})
	busy := latency([]float64{25, 99, 140}, []float64{160, 162, 170})

	note := cacheNote(quiet, 32<<20)
	require.Contains(t, note, "The last-level cache holds 32 MiB")
	require.Contains(t, note, "within 8 MiB took 25 ns (24-26 over the runs), from 64 MiB 165 ns")
	require.NotContains(t, note, "other tenants")
	require.NotContains(t, note, "found it free")

	note = cacheNote(busy, 32<<20)
	require.Contains(t, note, "within 8 MiB took 99 ns (25-140 over the runs)")
	require.Contains(t, note, "In 2 of the 3 times")
	require.Contains(t, note, "other tenants")

	// Rows that found 8 MiB free (40 to 45 ns against 150 from memory),
	// and probes after the benchmarks that mostly found it held: the
	// report says they disagree, and which found what.
	probed := parse(benchOutput(3, map[string]map[string][]float64{
		"MemoryLatency/MiB=8":           {"ns/op": {40, 42, 45}},
		"MemoryLatency/MiB=64":          {"ns/op": {150, 150, 150}},
		"Contains/1M/tallybloom/member": {"ns/op": {60, 60, 60}, "cache-ns": {120, 130, 140}},
		"Add/1M/tallybloom":             {"ns/op": {200, 200, 200}, "cache-ns": {125, 135, 50}},
	}))
	note = cacheNote(probed, 32<<20)
	require.Contains(t, note, "In 5 of the 9 times")
	require.Contains(t, note, "a load from memory. The memory latency rows, though, which walk the 8 MiB for a quarter second and more, found it free, where most probes, each after a benchmark and three times round first, found it held")
	require.NotContains(t, note, "held the shared cache then", "the report does not blame other tenants where its measures disagree")
	require.NotContains(t, cacheNote(busy, 32<<20), "found it free", "rows that found the cache busy agree with busy probes")

	require.NotContains(t, cacheNote(busy, 8<<20), "other tenants", "8 MiB does not fit a cache of 8 MiB: memory is not a neighbour")
	unknown := cacheNote(busy, 0)
	require.Contains(t, unknown, "The kernel names no caches here, so the report cannot say which filters the last-level cache would hold")
	require.Contains(t, unknown, "within 8 MiB took 99 ns (25-140 over the runs)")
	require.NotContains(t, unknown, "In 2 of the 3 times", "without the cache's size no run is judged")
	require.NotContains(t, note, "names no caches")
	require.Empty(t, cacheNote(latency(nil, nil), 32<<20), "nothing measured, nothing said")

	report := write(busy, nil, runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", took: time.Minute}, "results.svg")
	machine, _, _ := strings.Cut(report, "## Targets")
	require.Contains(t, machine, "In 2 of the 3 times", "the Machine section carries it")
}

// The memory latency rows run at one moment of a run; the benchmarks of
// filters the cache would hold measure it after each of their runs, and
// the targets built on them say in which runs the cache was held.
func TestTargetsSayInHowManyRunsTheCacheWasHeld(t *testing.T) {
	rows := map[string]map[string][]float64{
		// The memory latency rows ran while the cache was quiet.
		"MemoryLatency/MiB=8":  {"ns/op": {24, 25, 26}},
		"MemoryLatency/MiB=64": {"ns/op": {160, 160, 160}},
		// Held during the second run of tallybloom's lookups, and the
		// third of bits-and-blooms': over 40% of 160 ns.
		"Contains/1M/tallybloom-fixed/member": {"ns/op": {50, 90, 50}, "cache-ns": {25, 120, 30}},
		"Contains/1M/bits-and-blooms/member":  {"ns/op": {100, 100, 130}, "cache-ns": {26, 27, 70}},
		// Quiet throughout.
		"Add/1M/tallybloom-fixed": {"ns/op": {200, 200, 200}, "cache-ns": {25, 25, 25}},
		"Add/1M/bits-and-blooms":  {"ns/op": {100, 100, 100}, "cache-ns": {25, 25, 25}},
	}
	r := parse(benchOutput(3, rows))
	report := write(r, nil, runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", took: time.Minute}, "results.svg")

	machine, _, _ := strings.Cut(report, "## Targets")
	require.Contains(t, machine, "In 2 of the 15 times", "the probes after each run count, not only the memory rows")
	require.Contains(t, report, "| Contains, 1M, 1 sub-filter, vs bits-and-blooms Test | "+asFixed+" | 0.50x | 0.38-0.90x, cache held in 2 of 3 | at most 1x | met |")
	require.Contains(t, report, "| Add, 1M, vs bits-and-blooms Add | "+asFixed+" | 2.00x | 2.00-2.00x | at most 1.5x | **missed** |",
		"a target whose runs were quiet says nothing of the cache")
	require.NotContains(t, report, "AddBatch", "no batch measured, no batch quoted")
	require.Contains(t, report, "in this run's memory latency rows a dependent load within 8 MiB took 25 ns, and one from memory 160",
		"the Add reason says what a trip to the cache and to memory cost in this run")

	small := testHost
	small.llc = 8 << 20
	require.NotContains(t, write(r, nil, runInfo{h: small, mode: "short", count: 3, benchtime: "250ms", took: time.Minute}, "results.svg"), "cache held",
		"a cache that need not hold 8 MiB is no sign of neighbours")
}

// The side-by-side lookups at 64M get a section of their own, each way's
// ratio from its own blocks beside the ratio alone that the targets judge,
// and no row among everything else.
func TestSideBySideLookupsAreShownBesideTheRatioAlone(t *testing.T) {
	rows := map[string]map[string][]float64{
		"ContainsSideBySide/64M/tallybloom":       {"ns/op": {9e5, 9e5, 9e5}, "tally-ns": {240, 230, 250}, "peer-ns": {300, 250, 250}},
		"ContainsSideBySide/64M/tallybloom-large": {"ns/op": {8e5, 8e5, 8e5}, "tally-ns": {180, 180, 180}, "peer-ns": {240, 240, 240}},
		"Contains/64M/tallybloom/member":          {"ns/op": {190, 190, 190}},
		"Contains/64M/tallybloom-large/member":    {"ns/op": {180, 180, 180}},
		"Contains/64M/bits-and-blooms/member":     {"ns/op": {250, 250, 250}},
	}
	report := write(parse(benchOutput(3, rows)), nil, runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", took: time.Minute}, "results.svg")
	_, section, ok := strings.Cut(report, "### Contains at 64M, side by side with bits-and-blooms")
	require.True(t, ok, "the section is there")
	section, _, _ = strings.Cut(section, "## Everything else")
	// Run by run 0.80, 0.92 and 1.00: the median and the range; alone, 0.76.
	require.Contains(t, section, "| tallybloom | 240.0 | 250.0 | 0.92x | 0.80-1.00x | 0.76x |")
	require.Contains(t, section, "| tallybloom-large | 180.0 | 240.0 | 0.75x | 0.75-0.75x | 0.72x |")
	require.NotContains(t, section, "tallybloom-fixed", "a way not measured side by side has no row")
	require.NotContains(t, report, "| ContainsSideBySide/", "not repeated among everything else")

	delete(rows, "ContainsSideBySide/64M/tallybloom")
	delete(rows, "ContainsSideBySide/64M/tallybloom-large")
	require.NotContains(t, write(parse(benchOutput(3, rows)), nil, runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", took: time.Minute}, "results.svg"), "### Contains at 64M, side by side",
		"nothing measured, nothing said")
}

// The reason for a missed lookup target at 64M puts the gap between 4 KiB
// and 2 MiB pages down to the page walk only where 2 MiB pages were faster
// in the run.
func TestTheLookupReasonQuotesThePageWalkOnlyWhereItShowed(t *testing.T) {
	reason := func(withPages, withLarge float64) string {
		report := write(parse(benchOutput(3, map[string]map[string][]float64{
			"Contains/64M/tallybloom/member":       {"ns/op": {withPages, withPages, withPages}},
			"Contains/64M/tallybloom-large/member": {"ns/op": {withLarge, withLarge, withLarge}},
			"Contains/64M/bits-and-blooms/member":  {"ns/op": {200, 200, 200}},
		})), nil, runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", took: time.Minute}, "results.svg")
		_, reasons, ok := strings.Cut(report, "Why the targets not met are missed:")
		require.True(t, ok, "a lookup at 0.9x and more misses 0.7x")
		reasons, _, _ = strings.Cut(reasons, "\n## ")
		return reasons
	}
	walked := reason(190, 180)
	require.Contains(t, walked, "190 ns a lookup with 4 KiB pages against 180 with 2 MiB pages in this run: the difference is the page walk that a 4 KiB page adds")
	require.NotContains(t, walked, "did not show")

	unwalked := reason(177, 183)
	require.Contains(t, unwalked, "177 ns a lookup with 4 KiB pages against 183 with 2 MiB pages in this run: the page walk that a 4 KiB page adds to nearly every lookup at this size did not show")
	require.NotContains(t, unwalked, "the difference is the page walk")
}

// Whether LargePages took decides what its rows measure: the Machine
// section says how much of the 64M filter the kernel mapped large.
func TestReportSaysHowMuchTheKernelMappedLarge(t *testing.T) {
	rows := map[string]map[string][]float64{
		"Contains/64M/tallybloom-large/member": {"ns/op": {180, 190, 250}, "large-share": {0.996, 0.99, 0.2}},
	}
	report := write(parse(benchOutput(3, rows)), nil, runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", took: time.Minute}, "results.svg")
	machine, _, _ := strings.Cut(report, "## Targets")
	require.Contains(t, machine, "the kernel mapped 99% of the 64M filter's counters and presence bits with 2 MiB pages (20-100% over the runs)")

	delete(rows, "Contains/64M/tallybloom-large/member")
	require.NotContains(t, write(parse(benchOutput(3, rows)), nil, runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", took: time.Minute}, "results.svg"), "2 MiB pages (",
		"nothing measured, nothing said")
}

// The reports committed beside the bench are what the report writes from
// their kept output (so a change to the report's text is seen in them), and
// no text of it fails to format, which go vet cannot see in the reasons
// kept as constants.
func TestTheCommittedReportsAreWhatTheReportWrites(t *testing.T) {
	for _, name := range []string{"RESULTS", "RESULTS-full"} {
		kept := filepath.Join("..", "..", name+".txt")
		dir := t.TempDir()
		require.NoError(t, rewrite(kept, filepath.Join(dir, name+".md"), filepath.Join(dir, "chart.svg")))
		got, err := os.ReadFile(filepath.Join(dir, name+".md"))
		require.NoError(t, err)
		require.NotContains(t, string(got), "%!", "a verb without its value, or a percent sign not doubled")
		want, err := os.ReadFile(filepath.Join("..", "..", name+".md"))
		require.NoError(t, err)
		// The chart's name is the report's to choose; the rest must agree.
		chart := map[string]string{"RESULTS": "results.svg", "RESULTS-full": "results-full.svg"}[name]
		require.Equal(t, string(want), strings.ReplaceAll(string(got), "(chart.svg)", "("+chart+")"),
			"%s.md is not what go run ./cmd/report -from %s.txt writes; write it again", name, name)
	}
}

// A timing that faulted on one op in a hundred or more is named with its
// faults, wherever its row is; one under that, or AddUntouched's, whose
// adds are first stores, is not.
func TestReportNamesTheTimingsThatFaulted(t *testing.T) {
	rows := map[string]map[string][]float64{
		"Add/64M/tallybloom":                {"ns/op": {290, 300, 310}, "faults/op": {0, 0.001, 0}},
		"TestAndAddNew/64M/tallybloom":      {"ns/op": {2400, 2450, 2200}, "faults/op": {1.9, 2.1, 1.7}},
		"AddBatch/64M/tallybloom-fixed":     {"ns/op": {4e5, 4e5, 4e5}, "faults/key": {0.02, 0.03, 0.05}},
		"AddUntouched/64M/tallybloom-fixed": {"ns/op": {2e4, 2e4, 2e4}, "faults/op": {2, 2, 2}},
	}
	report := write(parse(benchOutput(3, rows)), nil, runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", took: time.Minute}, "results.svg")
	require.Contains(t, report, "in this run these timings faulted on one op in a hundred or more, and their times hold those faults: AddBatch/64M/tallybloom-fixed (0.03 faults/key), TestAndAddNew/64M/tallybloom (1.90 faults/op).")
	require.Contains(t, report, "| TestAndAddNew/64M/tallybloom | 2400.0 |  |  | 1.900 faults/op |")
	require.Contains(t, report, "| AddBatch/64M/tallybloom-fixed | 400000.0 |  |  | 0.030 faults/key |")

	rows["TestAndAddNew/64M/tallybloom"]["faults/op"] = []float64{0, 0.002, 0}
	delete(rows, "AddBatch/64M/tallybloom-fixed")
	require.Contains(t, write(parse(benchOutput(3, rows)), nil, runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", took: time.Minute}, "results.svg"),
		"in this run none of their timings faulted on one op in a hundred.")

	for _, row := range rows {
		delete(row, "faults/op")
	}
	require.NotContains(t, write(parse(benchOutput(3, rows)), nil, runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", took: time.Minute}, "results.svg"),
		"(faults/op", "a run that counted no faults says nothing of them")
}

// Without redis-server the report says so before it runs anything, rather
// than minutes into the run, and writes nothing.
func TestReportWithoutRedisSaysSoAtOnce(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	out := filepath.Join(t.TempDir(), "RESULTS.md")
	err := run(false, 1, out, filepath.Join(t.TempDir(), "results.svg"))
	require.ErrorIs(t, err, errNoRedis)
	require.Contains(t, err.Error(), "apt-get install redis-server")
	require.NoFileExists(t, out)
}

// The report compiles the suite and then runs the binary itself, with go
// test's flags as a test binary spells them: run so, a benchmark prints
// the lines parse reads.
func TestTheCompiledSuiteRunsItsBenchmarks(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the bench suite")
	}
	var info runInfo
	suite, env, err := compile("../..", t.TempDir(), &info)
	require.NoError(t, err)
	cmd := exec.Command(suite, suiteArgs("^BenchmarkOpen$/^1MiB$", "2x", 2, "ci")...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	r := parse(string(out))
	require.Len(t, r["Open/1MiB"]["ns/op"], 2, "both runs reported, in:\n%s", out)
	require.Len(t, r, 1, "only the benchmark asked for ran")
}

func TestAShortRunOverItsFiveMinutesSaysSo(t *testing.T) {
	r := parse(benchOutput(1, map[string]map[string][]float64{"Contains/1M/tallybloom/member": {"ns/op": {50}}}))
	const over = "longer than the 5m0s short mode is meant to take"
	require.NotContains(t, write(r, nil, runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", took: 4*time.Minute + 50*time.Second}, "results.svg"), over)
	require.Contains(t, write(r, nil, runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", took: 5*time.Minute + 10*time.Second}, "results.svg"), over)
	require.NotContains(t, write(r, nil, runInfo{h: testHost, mode: "full", count: 3, benchtime: "1s", took: 16 * time.Minute}, "results.svg"), over, "full mode has no limit")

	// The limit is the suite's: compiling it, paid once on a machine that
	// has built nothing yet, is timed apart and said beside it.
	compiled := write(r, nil, runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", built: 70 * time.Second, took: 4*time.Minute + 35*time.Second}, "results.svg")
	require.NotContains(t, compiled, over)
	require.Contains(t, compiled, "(short mode, the median of 3 runs of 250ms each): the suite ran for 4m35s, after 1m10s compiling it. ")
	require.Contains(t, write(r, nil, runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", built: 10 * time.Second, took: 5*time.Minute + 10*time.Second}, "results.svg"), over)
}

func TestReportSaysHowDabloomsWasMeasuredOrWhyNot(t *testing.T) {
	ns := func(v float64) map[string][]float64 { return map[string][]float64{"ns/op": {v}} }
	measured := parse(benchOutput(1, map[string]map[string][]float64{
		"Contains/1M/dablooms/member":        ns(150),
		"Contains/1M/bits-and-blooms/member": ns(100),
		"Remove/1M/dablooms":                 ns(160),
		"CgoCall":                            ns(31),
		"TestAndAdd/1M/dablooms":             ns(170),
		"Chain/subs=1/dablooms":              ns(120),
		"Chain/subs=5/dablooms":              ns(500),
		"Chain/subs=10/dablooms":             ns(1000),
		"Chain/subs=1/tallybloom":            ns(80),
		"Chain/subs=5/tallybloom":            ns(100),
		"Chain/subs=10/tallybloom":           ns(200),
	}))
	report := write(measured, nil, runInfo{h: testHost, mode: "short", count: 1, benchtime: "250ms", took: time.Minute}, "results.svg")
	require.Contains(t, report, "| Contains member | 1M | dablooms | 150.0 | 1.50x |", "a row of the table, against bits-and-blooms")
	require.Contains(t, report, "which costs 31 ns a call on this machine", "the cost of cgo, from its benchmark")
	require.Contains(t, report, "BoomFilters' counting filter and dablooms are the peers that remove")
	require.Contains(t, report, "a lookup of a non-member took 120, 500 and 1000 ns through 1, 5 and 10 sub-filters, against tallybloom's 80, 100 and 200 by default: 1.50x, 5.00x and 5.00x tallybloom's time", "its chains beside tallybloom's")
	require.Contains(t, report, "its TestAndAdd rows are a lookup and, for a key it lacks, an add")

	without := parse(benchOutput(1, map[string]map[string][]float64{"Contains/1M/bits-and-blooms/member": ns(100)}))
	noCompiler := testHost
	noCompiler.noDablooms = "dablooms: no C compiler (cc) on the PATH"
	report = write(without, nil, runInfo{h: noCompiler, mode: "short", count: 1, benchtime: "250ms", took: time.Minute}, "results.svg")
	require.Contains(t, report, "dablooms, bitly's C library that tallybloom succeeds, was not measured in this run: dablooms: no C compiler (cc) on the PATH.")
	require.NotContains(t, report, "| dablooms |")
	require.NotContains(t, report, "sub-filters, against tallybloom's", "no chain sentence without dablooms' chains")
	require.Contains(t, report, "BoomFilters' counting filter is the only peer that removes")
}

func TestChartLeavesOutALibraryWithoutResults(t *testing.T) {
	r := parse(benchOutput(1, map[string]map[string][]float64{
		"Contains/20K/bits-and-blooms/member": {"ns/op": {100}},
		"Contains/1M/bits-and-blooms/member":  {"ns/op": {110}},
	}))
	path := filepath.Join(t.TempDir(), "chart.svg")
	require.NoError(t, drawChart(r, path))
	svg, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(svg), "bits-and-blooms")
	require.NotContains(t, string(svg), "dablooms", "no legend entry for a library not measured")

	// A run that measured one size still has a chart, its axis spanning
	// all three.
	one := parse(benchOutput(1, map[string]map[string][]float64{"Contains/1M/bits-and-blooms/member": {"ns/op": {110}}}))
	require.NoError(t, drawChart(one, path))
	svg, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(svg), "bits-and-blooms")
	require.Contains(t, string(svg), ">64<", "the axis reaches the largest size")
}

// TestChartLinkIsRelativeToTheReport: the report links its chart by a path
// relative to the report's own directory, never by where the report was
// written from, so a report written elsewhere and committed beside its
// chart still shows it.
func TestChartLinkIsRelativeToTheReport(t *testing.T) {
	for _, c := range []struct{ out, chart, link string }{
		{"RESULTS.md", "results.svg", "results.svg"},
		{"/tmp/runs/R4.md", "/tmp/runs/r4.svg", "r4.svg"},
		{"reports/RESULTS.md", "results.svg", "../results.svg"},
		{"/tmp/runs/R4.md", "/tmp/runs/charts/r4.svg", "charts/r4.svg"},
	} {
		require.Equal(t, c.link, chartLink(c.out, c.chart), "report %s, chart %s", c.out, c.chart)
	}
}

// The machine's line tells apart processors a virtual machine names alike,
// by their family and model numbers, and gives each cache of a core.
func TestMachineLineNamesTheProcessorAndItsCaches(t *testing.T) {
	cpuinfo := "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\nmodel name\t: Intel(R) Xeon(R) Processor\nstepping\t: 2\n\n" +
		"processor\t: 1\ncpu family\t: 15\nmodel\t\t: 1\nmodel name\t: Another\n"
	require.Equal(t, "Intel(R) Xeon(R) Processor (family 6, model 207)", cpuModel(cpuinfo))
	require.Equal(t, "BCM2711", cpuModel("processor\t: 0\nmodel name\t: BCM2711\n"), "no family where none is given")
	require.Equal(t, "unknown CPU", cpuModel(""))

	dir := t.TempDir()
	for i, c := range []struct{ level, kind, size string }{
		{"1", "Data", "48K"}, {"1", "Instruction", "32K"}, {"2", "Unified", "2048K"}, {"3", "Unified", "266240K"},
	} {
		index := filepath.Join(dir, fmt.Sprintf("index%d", i))
		require.NoError(t, os.Mkdir(index, 0o755))
		for name, text := range map[string]string{"level": c.level, "type": c.kind, "size": c.size + "\n"} {
			require.NoError(t, os.WriteFile(filepath.Join(index, name), []byte(text), 0o644))
		}
	}
	caches := cpuCaches(dir)
	require.Equal(t, ", caches L1d 48 KiB, L1i 32 KiB, L2 2 MiB, L3 260 MiB", cachesText(caches))
	require.Equal(t, int64(260<<20), caches[3].bytes)
	require.Empty(t, cachesText(cpuCaches(filepath.Join(dir, "none"))))
}

// A target whose benchmarks did not run as often as each other has no
// ratio (run i pairs with run i), and its reason says how many runs each
// measured and what go test printed for them.
func TestAnUnmeasuredTargetSaysWhatItLacked(t *testing.T) {
	out := benchOutput(3, map[string]map[string][]float64{"Open/1MiB": {"ns/op": {40000, 41000, 42000}}}) +
		benchOutput(2, map[string]map[string][]float64{"Open/4GiB": {"ns/op": {50000, 51000}}}) +
		"--- SKIP: BenchmarkOpen/4GiB-2\n    bench_test.go:915: no room for 4GiB: no space left on device\n"
	report := write(parse(out), logged(out), runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", took: time.Minute}, "results.svg")
	require.Contains(t, report, "| Open, 4 GiB vs 1 MiB | "+asDefault+" |  |  | at most 2x | **not measured** |")
	require.Contains(t, report, "\n- Open, 4 GiB vs 1 MiB: this run has no measurement for it: its ratio pairs run i of Open/4GiB with run i of Open/1MiB, "+
		"which reported ns/op in 2 runs and 3; go test printed for Open/4GiB: \"no room for 4GiB: no space left on device\".\n")
	require.Contains(t, report, "\n- Mirror: changes shipped to a local Redis, per second (x 200 000): this run has no measurement for it: MirrorShip reported changes/s in 0 runs.\n",
		"one measurement, not run at all")
}

// go test's output is kept beside the report, named as it is.
func TestAFigureTheRunLacksSaysSo(t *testing.T) {
	require.Equal(t, "12 ns against (not measured) ns, 0.50x", sayf("%.0f ns against %.0f ns, %.2fx", 12, math.NaN(), 0.5))
	require.Equal(t, "(not measured)x", sayf("%.2fx", math.Inf(1)))
}

func TestRawOutputLiesBesideTheReport(t *testing.T) {
	require.Equal(t, "RESULTS.txt", rawPath("RESULTS.md"))
	require.Equal(t, filepath.Join("out", "RESULTS-full.txt"), rawPath(filepath.Join("out", "RESULTS-full.md")))
}

// A report keeps its run's go test output headed by what the report says
// of the run, so that -from writes the same report again from that file
// alone, and the output stays one benchstat reads.
func TestAKeptRunWritesTheSameReportAgain(t *testing.T) {
	text := benchOutput(3, map[string]map[string][]float64{
		"Contains/1M/tallybloom/member":      {"ns/op": {50, 52, 51}},
		"Contains/1M/bits-and-blooms/member": {"ns/op": {80, 81, 79}},
	}) + "--- SKIP: BenchmarkAddUntouched/64M/tallybloom-fixed-2\n    bench_test.go:12: measured once\n"
	info := runInfo{h: host{about: "a test machine, 2 cores.", llc: 32 << 20, noDablooms: `dablooms: no "cc" on the PATH`},
		mode: "full", count: 3, benchtime: "1s", took: 12*time.Minute + 16*time.Second}
	first, again := t.TempDir(), t.TempDir()
	kept := filepath.Join(first, "RESULTS.txt")
	require.NoError(t, os.WriteFile(kept, append(info.header(), text...), 0o644))
	require.NoError(t, render(text, info, kept, filepath.Join(first, "RESULTS.md"), filepath.Join(first, "results.svg")))

	require.NoError(t, rewrite(kept, filepath.Join(again, "RESULTS.md"), filepath.Join(again, "results.svg")))
	want, err := os.ReadFile(filepath.Join(first, "RESULTS.md"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(again, "RESULTS.md"))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
	require.Contains(t, string(got), "full mode, the median of 3 runs of 1s each, 12m16s in all", "the run's details come from the header")
	require.Contains(t, string(got), `was not measured in this run: dablooms: no "cc" on the PATH.`)
	require.FileExists(t, filepath.Join(again, "results.svg"))
	copied, err := os.ReadFile(filepath.Join(again, "RESULTS.txt"))
	require.NoError(t, err)
	require.Equal(t, append(info.header(), text...), copied, "the kept output goes beside the report written from it")

	// Written again in place, the kept output is left as it is.
	require.NoError(t, rewrite(kept, filepath.Join(first, "RESULTS.md"), filepath.Join(first, "results.svg")))
	inPlace, err := os.ReadFile(kept)
	require.NoError(t, err)
	require.Equal(t, copied, inPlace)

	// benchstat's reader takes the header for configuration and still
	// finds every run.
	f, err := os.Open(kept)
	require.NoError(t, err)
	defer f.Close()
	reader := benchfmt.NewReader(f, kept)
	runs := 0
	for reader.Scan() {
		switch rec := reader.Result().(type) {
		case *benchfmt.Result:
			runs++
			require.Equal(t, "full", string(rec.GetConfig(keyMode)))
			require.Equal(t, "12m16s", string(rec.GetConfig(keyTook)))
		case *benchfmt.SyntaxError:
			t.Fatalf("benchstat cannot read the kept output: %v", rec)
		}
	}
	require.NoError(t, reader.Err())
	require.Equal(t, 6, runs)
	require.NotContains(t, string(copied), keyFailed, "a run that passed says nothing of a failure")
}

// Output without the header (go test's alone, or kept by a report older
// than -from) or with a damaged one is refused with the reason, and no
// report is written.
func TestRewriteRefusesOutputItCannotTrust(t *testing.T) {
	text := benchOutput(1, map[string]map[string][]float64{"Contains/1M/tallybloom/member": {"ns/op": {50}}})
	good := runInfo{h: testHost, mode: "short", count: 1, benchtime: "250ms", took: time.Minute}.header()
	for name, tc := range map[string]struct {
		kept string
		want error
	}{
		"no header":   {text, errNoHeader},
		"a bad count": {strings.Replace(string(good), "report-count: 1", "report-count: one", 1) + text, errBadHeader},
		"no mode":     {strings.Replace(string(good), "report-mode: short\n", "", 1) + text, errBadHeader},
		"a bad time":  {strings.Replace(string(good), "report-took: 1m0s", "report-took: a minute", 1) + text, errBadHeader},
		"a bad build": {strings.Replace(string(good), "report-took: 1m0s", "report-built: long\nreport-took: 1m0s", 1) + text, errBadHeader},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			kept := filepath.Join(dir, "RESULTS.txt")
			require.NoError(t, os.WriteFile(kept, []byte(tc.kept), 0o644))
			out := filepath.Join(dir, "RESULTS.md")
			err := rewrite(kept, out, filepath.Join(dir, "results.svg"))
			require.ErrorIs(t, err, tc.want)
			require.Contains(t, err.Error(), kept, "the error names the file")
			require.NoFileExists(t, out)
		})
	}
}

// A run in which go test failed still gets a report of the benchmarks that
// ran, which says so at its top, marks the targets whose benchmarks failed
// as not measured, with what go test printed, and keeps the failure for
// -from; and the failure is still returned.
func TestAFailedRunStillReportsWhatRan(t *testing.T) {
	text := benchOutput(3, map[string]map[string][]float64{
		"Contains/1M/tallybloom-fixed/member": {"ns/op": {50, 52, 51}},
		"Contains/1M/bits-and-blooms/member":  {"ns/op": {80, 81, 79}},
		"Add/1M/tallybloom":                   {"ns/op": {200, 210, 190}},
		"Add/1M/bits-and-blooms":              {"ns/op": {100, 100, 100}},
	})
	text = strings.TrimSuffix(text, "PASS\nok  \tgithub.com/tallybloom/tallybloom/bench\t1.0s\n") +
		"--- FAIL: BenchmarkAdd/1M/tallybloom-fixed-2\n    bench_test.go:99: add: no room left on the device\n" +
		"panic: redis-server quit [recovered]\n\tpanic: redis-server quit\n\ngoroutine 7 [running]:\n" +
		"FAIL\tgithub.com/tallybloom/tallybloom/bench\t10.0s\n"
	exit := errors.New("exit status 2")
	dir := t.TempDir()
	out, chart := filepath.Join(dir, "RESULTS.md"), filepath.Join(dir, "results.svg")
	info := runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", took: 3 * time.Minute}

	err := finish(text, exit, info, out, chart)
	require.ErrorIs(t, err, exit)
	require.Contains(t, err.Error(), out+" is of the benchmarks that ran")
	report, readErr := os.ReadFile(out)
	require.NoError(t, readErr)
	require.Contains(t, string(report), "**go test failed (exit status 2, panic: redis-server quit [recovered])**: this report is of the benchmarks that ran")
	require.Contains(t, string(report), "| Contains, 1M, 1 sub-filter, vs bits-and-blooms Test | fixed at 1% | 0.64x |", "what ran is judged")
	require.Regexp(t, `Add, 1M, vs bits-and-blooms Add \| fixed at 1% \|[^\n]*not measured`, string(report))
	require.Contains(t, string(report), `go test printed for Add/1M/tallybloom-fixed: "add: no room left on the device"`)
	require.NotContains(t, string(report), "NaN", "what did not run shows no figure")
	require.Contains(t, string(report), "the 20K rows) that takes (not measured) ns fixed", "a missed target's reason says which of its figures the run lacks")
	require.Contains(t, string(report), "This run has no AddUntouched row for every way it measures.")
	require.FileExists(t, chart)

	// The failure is kept with the run: written again, the report says it.
	again := filepath.Join(t.TempDir(), "RESULTS.md")
	require.NoError(t, rewrite(rawPath(out), again, filepath.Join(filepath.Dir(again), "results.svg")))
	rewritten, readErr := os.ReadFile(again)
	require.NoError(t, readErr)
	require.Equal(t, string(report), string(rewritten))

	// A run that passed says nothing of a failure.
	require.NoError(t, finish(benchOutput(3, map[string]map[string][]float64{
		"Contains/1M/bits-and-blooms/member": {"ns/op": {80, 81, 79}},
	}), nil, info, out, chart))
	report, readErr = os.ReadFile(out)
	require.NoError(t, readErr)
	require.NotContains(t, string(report), "go test failed")

	// One that reported nothing leaves its output and no report.
	empty := t.TempDir()
	out = filepath.Join(empty, "RESULTS.md")
	err = finish("panic: the bench did not build\n", exit, info, out, filepath.Join(empty, "results.svg"))
	require.ErrorIs(t, err, exit)
	require.Contains(t, err.Error(), "no benchmark reported")
	require.NoFileExists(t, out)
	require.FileExists(t, rawPath(out))
}

// readHeader reads whatever a kept file holds without panicking, and the
// header of any run info reads back as that info.
func FuzzReadHeader(f *testing.F) {
	good := runInfo{h: testHost, mode: "short", count: 3, benchtime: "250ms", took: 3*time.Minute + 26*time.Second, failed: "exit status 1"}
	f.Add(string(good.header())+"goos: linux\n", "a machine: with a colon", int64(32<<20), 3, int64(time.Minute))
	f.Add("report-count: 3\nreport-mode\n", "", int64(0), 0, int64(0))
	f.Add("report-machine: x\nreport-llc-bytes: -1\nreport-mode: full\nreport-count: 1\nreport-benchtime: 1s\nreport-took: 1s\n", "m", int64(-1), -1, int64(-1))
	f.Fuzz(func(t *testing.T, kept, about string, llc int64, count int, took int64) {
		_, _, _ = readHeader(kept)

		info := runInfo{h: host{about: about, llc: llc}, mode: "full", count: count, benchtime: "1s", built: time.Duration(took / 3), took: time.Duration(took)}
		if about == "" || strings.ContainsAny(about, "\r\n") {
			return // the machine line is one line, never empty
		}
		back, rest, err := readHeader(string(info.header()) + "goos: linux\n")
		require.NoError(t, err)
		require.Equal(t, info, back)
		require.Equal(t, "goos: linux\n", rest)
	})
}
