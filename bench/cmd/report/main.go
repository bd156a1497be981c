// Command report runs the bench suite and writes RESULTS.md: ns/op,
// allocations, bits per key and measured false-positive rate for every
// library and workload, the ratios against bits-and-blooms, the targets met
// and missed, the machine, and a chart of lookup time against filter size;
// and beside it go test's own output (RESULTS.txt), which benchstat reads,
// headed by the run's details.
//
//	go run ./cmd/report            # short mode, under five minutes on two cores
//	go run ./cmd/report -full -out RESULTS-full.md -chart results-full.svg
//	                               # 64M filters filled to 64M keys, for releases
//	go run ./cmd/report -from RESULTS.txt
//	                               # the report and chart again from a kept
//	                               # run, running nothing
//
// The mirror's benchmarks start a real redis-server, which must be on the
// PATH.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/tallybloom/tallybloom/bench/dablooms"
)

func main() {
	full := flag.Bool("full", false, "64M filters filled to 64M keys (slow)")
	count := flag.Int("count", 3, "runs of each benchmark; the report quotes medians")
	out := flag.String("out", "RESULTS.md", "report to write")
	chart := flag.String("chart", "results.svg", "chart to write")
	from := flag.String("from", "", "write the report and chart again from the go test output an earlier report kept (its RESULTS.txt), running nothing")
	flag.Parse()
	var err error
	if *from != "" {
		err = rewrite(*from, *out, *chart)
	} else {
		err = run(*full, *count, *out, *chart)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(full bool, count int, out, chart string) error {
	// Short mode must finish in under five minutes on two cores. On a
	// slow one (an AMD EPYC VM, memory twice as slow as the Xeon the
	// earlier reports ran on) building the 64M filters took a minute and a
	// half, and runs of 400ms made it 5m37s in all.
	info := runInfo{mode: "short", count: count, benchtime: "250ms"}
	if full {
		info.mode, info.benchtime = "full", "1s"
	}
	// The mirror's benchmarks start a real redis-server; without one they
	// would fail minutes into the run and leave no report.
	if _, err := exec.LookPath("redis-server"); err != nil {
		return errNoRedis
	}
	fmt.Fprintf(os.Stderr, "running the %s suite (%d runs of each benchmark)...\n", info.mode, count)
	info.h = thisMachine()
	dir, err := os.MkdirTemp("", "tallybloom-report-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The suite is compiled before it runs, and the two are timed apart:
	// on a machine that has built nothing yet, compiling the bench, its
	// peers and their dependencies took 70 s of a two-core AMD EPYC, which
	// says nothing of the suite and is paid once.
	started := time.Now()
	suite, env, err := compile(".", dir, &info)
	if err != nil {
		return err
	}
	info.built = time.Since(started)
	started = time.Now()
	cmd := exec.Command(suite, suiteArgs(".", info.benchtime, count, info.mode)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	runErr := cmd.Run()
	info.took = time.Since(started)
	return finish(stdout.String(), runErr, info, out, chart)
}

// suiteArgs are the arguments that run the benchmarks matching pattern in
// the compiled suite (see compile), each count times for benchtime, at the
// filter sizes named: go test's flags, spelled as its test binary takes them.
func suiteArgs(pattern, benchtime string, count int, sizes string) []string {
	return []string{"-test.run", "^$", "-test.bench", pattern, "-test.benchmem", "-test.benchtime", benchtime,
		"-test.count", strconv.Itoa(count), "-test.timeout", "60m", "-sizes", sizes}
}

// compile builds the test binary of the bench package in pkg into dir and
// returns its path and the environment it runs in. It compiles dablooms
// first, and builds the bench with it where that succeeds; where it does
// not, the Go peers are measured all the same and info says why dablooms
// is not, in one line of the compiler's words.
func compile(pkg, dir string, info *runInfo) (suite string, env []string, err error) {
	suite = filepath.Join(dir, "bench.test")
	args := []string{"test", "-c", "-o", suite}
	env, err = buildDablooms()
	if err != nil {
		info.h.noDablooms = strings.Join(strings.Fields(err.Error()), " ")
		fmt.Fprintf(os.Stderr, "dablooms will not be measured: %v\n", err)
		env = nil
	} else {
		args = append(args, "-tags", "dablooms")
	}
	build := exec.Command("go", append(args, pkg)...)
	build.Env = append(os.Environ(), env...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", nil, fmt.Errorf("compiling the suite: %w", err)
	}
	return suite, env, nil
}

// finish keeps go test's output text beside the report at out, headed by
// what the report says of the run (benchstat reads it, it holds what a
// benchmark logged when it skipped a run, and -from writes the report
// again from it), then writes the report and chart. A run that failed
// still gets a report of the benchmarks that ran, saying that it failed,
// and finish then returns the failure: a long run is not lost to one
// benchmark's failure, and no one takes its report for a whole one.
func finish(text string, runErr error, info runInfo, out, chart string) error {
	if runErr != nil {
		info.failed = runErr.Error()
		if p := panicLine(text); p != "" {
			info.failed += ", " + p
		}
	}
	raw := rawPath(out)
	if err := os.WriteFile(raw, append(info.header(), text...), 0o644); err != nil {
		return err
	}
	if runErr == nil {
		return render(text, info, raw, out, chart)
	}
	switch err := render(text, info, raw, out, chart); {
	case errors.Is(err, errNoResults):
		return fmt.Errorf("go test: %w, and no benchmark reported (its output is in %s)", runErr, raw)
	case err != nil:
		return err
	}
	return fmt.Errorf("go test: %w; %s is of the benchmarks that ran (go test's output is in %s)", runErr, out, raw)
}

// panicLine is the line that starts a panic in go test's output text,
// which ends the run where it happens, or "".
func panicLine(text string) string {
	for l := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(l, "panic: ") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// rewrite writes the report at out and the chart again from the go test
// output that an earlier report kept in from, running nothing: for a
// report whose words have changed since its run. The output is copied
// beside out where it is not there already.
func rewrite(from, out, chart string) error {
	kept, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	info, text, err := readHeader(string(kept))
	if err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	raw := rawPath(out)
	if !samePath(from, raw) {
		if err := os.WriteFile(raw, kept, 0o644); err != nil {
			return err
		}
	}
	return render(text, info, raw, out, chart)
}

// samePath reports whether a and b name one file, as far as their
// absolute paths tell.
func samePath(a, b string) bool {
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && absA == absB
}

// errNoResults is render's error for output in which no benchmark
// reported.
var errNoResults = errors.New("no benchmark results")

// render writes the report at out and the chart from go test's output
// text, kept in raw, of the run info describes.
func render(text string, info runInfo, raw, out, chart string) error {
	results := parse(text)
	if len(results) == 0 {
		return fmt.Errorf("%w in %s", errNoResults, raw)
	}
	if err := drawChart(results, chart); err != nil {
		return err
	}
	report := write(results, logged(text), info, chartLink(out, chart))
	return os.WriteFile(out, []byte(report), 0o644)
}

// runInfo is what a report says of its run besides the results: the
// machine, how the suite ran and how long it took.
type runInfo struct {
	h         host
	mode      string
	count     int
	benchtime string
	// built is how long compiling the suite took, 0 in a run kept before
	// the report timed it apart; took is how long the suite then ran (in
	// such a run, the two together).
	built time.Duration
	took  time.Duration
	// failed is how go test failed ("exit status 1", and the panic that
	// ended it, if one did), "" if it passed.
	failed string
}

// The header's keys, in the order header writes them. Each line is
// "key: value", a configuration line to benchstat.
const (
	keyMachine   = "report-machine"
	keyLLC       = "report-llc-bytes"
	keyDablooms  = "report-dablooms-not-measured"
	keyMode      = "report-mode"
	keyCount     = "report-count"
	keyBenchtime = "report-benchtime"
	keyBuilt     = "report-built"
	keyTook      = "report-took"
	keyFailed    = "report-go-test-failed"
)

// header is info as the lines that head the kept go test output.
func (info runInfo) header() []byte {
	var b bytes.Buffer
	for _, kv := range [][2]string{
		{keyMachine, info.h.about},
		{keyLLC, strconv.FormatInt(info.h.llc, 10)},
		{keyDablooms, info.h.noDablooms},
		{keyMode, info.mode},
		{keyCount, strconv.Itoa(info.count)},
		{keyBenchtime, info.benchtime},
		{keyBuilt, built(info.built)},
		{keyTook, info.took.String()},
		{keyFailed, info.failed},
	} {
		if kv[1] == "" {
			continue // dablooms measured, go test passed, the build not timed
		}
		// A value is one line; none that run makes has more.
		fmt.Fprintf(&b, "%s: %s\n", kv[0], strings.ReplaceAll(kv[1], "\n", " "))
	}
	return b.Bytes()
}

// built is a build time as the header keeps it: "" where the run did not
// time its build apart.
func built(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// errNoHeader is readHeader's error for output that does not start with
// the header: go test's alone, or kept by a report older than the header.
var errNoHeader = errors.New("the go test output is not headed by the report's run details (a report older than -from keeps none); run the suite again")

// readHeader splits kept output into the run info its header holds and go
// test's output after it.
func readHeader(kept string) (runInfo, string, error) {
	values := map[string]string{}
	rest := kept
	for {
		l, after, _ := strings.Cut(rest, "\n")
		key, value, ok := strings.Cut(l, ":")
		if !ok || !strings.HasPrefix(key, "report-") {
			break
		}
		values[key] = strings.TrimPrefix(value, " ")
		rest = after
	}
	if len(values) == 0 {
		return runInfo{}, "", errNoHeader
	}
	var errs []error
	field := func(key string, read func(string) error) {
		v, ok := values[key]
		if !ok {
			errs = append(errs, fmt.Errorf("no %s", key))
		} else if err := read(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	text := func(to *string) func(string) error { return func(v string) error { *to = v; return nil } }
	var info runInfo
	field(keyMachine, text(&info.h.about))
	field(keyMode, text(&info.mode))
	field(keyBenchtime, text(&info.benchtime))
	field(keyLLC, func(v string) (err error) { info.h.llc, err = strconv.ParseInt(v, 10, 64); return err })
	field(keyCount, func(v string) (err error) { info.count, err = strconv.Atoi(v); return err })
	field(keyTook, func(v string) (err error) { info.took, err = time.ParseDuration(v); return err })
	if _, ok := values[keyBuilt]; ok { // runs kept before the build was timed have none
		field(keyBuilt, func(v string) (err error) { info.built, err = time.ParseDuration(v); return err })
	}
	info.h.noDablooms, info.failed = values[keyDablooms], values[keyFailed]
	if err := errors.Join(errs...); err != nil {
		return runInfo{}, "", fmt.Errorf("%w: %w", errBadHeader, err)
	}
	return info, rest, nil
}

// errBadHeader is readHeader's error for a header it cannot read whole.
var errBadHeader = errors.New("the report's run details heading the go test output are damaged")

// rawPath is where go test's output goes for the report at out: beside it,
// named as it is, with .txt for its extension (RESULTS.txt).
func rawPath(out string) string {
	return strings.TrimSuffix(out, filepath.Ext(out)) + ".txt"
}

// chartLink is how the report at out links the chart at chart: relative to
// the report's directory, so that the link holds wherever the two are
// committed or copied together. A path that has no relative form (another
// volume) is linked as given.
func chartLink(out, chart string) string {
	absOut, errOut := filepath.Abs(out)
	absChart, errChart := filepath.Abs(chart)
	if errOut != nil || errChart != nil {
		return chart
	}
	rel, err := filepath.Rel(filepath.Dir(absOut), absChart)
	if err != nil {
		return chart
	}
	return filepath.ToSlash(rel)
}

// buildDablooms compiles dablooms, the C library tallybloom succeeds, for
// the bench's dablooms build, and returns the environment that links the
// bench with it; it fails where there is no C compiler. The build is kept
// in the user's cache directory (see dablooms.BuildShared), so that a
// second report does not compile and link the bench again.
func buildDablooms() ([]string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	flags, err := dablooms.BuildShared(".", filepath.Join(cache, "tallybloom-bench"))
	if err != nil {
		return nil, err
	}
	return flags.Env(), nil
}

// errNoRedis is run's error when redis-server is not on the PATH.
var errNoRedis = errors.New("the mirror's benchmarks start a redis-server, which is not on the PATH: install it (on Debian, apt-get install redis-server; ../scripts/test installs it when it is missing)")

// result is one benchmark's runs: every metric it reported, each run.
type result map[string][]float64

var line = regexp.MustCompile(`^Benchmark(\S+?)(-\d+)?\s+(\d+)\s+(.*)$`)

// parse collects every run of every benchmark. A run of no iterations is
// one the benchmark skipped (as AddUntouched skips the runs -count adds):
// go test still prints it, with NaN ns/op, and it is left out, so that a
// median is of the runs that measured.
func parse(text string) map[string]result {
	results := map[string]result{}
	scanner := bufio.NewScanner(strings.NewReader(text))
	for scanner.Scan() {
		m := line.FindStringSubmatch(scanner.Text())
		if m == nil || m[3] == "0" {
			continue
		}
		r := results[m[1]]
		if r == nil {
			r = result{}
			results[m[1]] = r
		}
		fields := strings.Fields(m[4])
		for i := 0; i+1 < len(fields); i += 2 {
			if v, err := strconv.ParseFloat(fields[i], 64); err == nil {
				r[fields[i+1]] = append(r[fields[i+1]], v)
			}
		}
	}
	return results
}

var (
	benchHeader = regexp.MustCompile(`^--- (?:SKIP|BENCH|FAIL): Benchmark(\S+?)(-\d+)?$`)
	benchLog    = regexp.MustCompile(`^\s+(?:\S+\.go:\d+: )?(.+)$`)
)

// logged collects what go test printed under each benchmark's name (a
// skip's reason, a failure, a log line), each message once, by benchmark.
func logged(text string) map[string][]string {
	said := map[string][]string{}
	name := ""
	for l := range strings.SplitSeq(text, "\n") {
		if m := benchHeader.FindStringSubmatch(l); m != nil {
			name = m[1]
			continue
		}
		m := benchLog.FindStringSubmatch(l)
		if m == nil {
			name = ""
			continue
		}
		if name != "" && !slices.Contains(said[name], m[1]) {
			said[name] = append(said[name], m[1])
		}
	}
	return said
}

func median(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	s := slices.Clone(values)
	slices.Sort(s)
	return s[len(s)/2]
}

func (r result) get(metric string) float64 { return median(r[metric]) }

func get(results map[string]result, name, metric string) float64 {
	if r, ok := results[name]; ok {
		return r.get(metric)
	}
	return math.NaN()
}

// spread is a ratio over the runs: its median and its smallest and largest,
// and in how many of the runs other tenants of the machine held the
// last-level cache while a filter it would hold was measured.
type spread struct {
	median, lo, hi float64
	runs, held     int
	// needs names the measurements the ratio is made of, so that a ratio
	// this run could not make says which of them it lacked.
	needs []measurement
}

// measurement is one metric of one benchmark.
type measurement struct{ name, metric string }

// pairOf is pair of the runs of two benchmarks' metric.
func pairOf(r map[string]result, metric, num, den string) spread {
	sp := pair(values(r, num, metric), values(r, den, metric))
	sp.needs = []measurement{{num, metric}, {den, metric}}
	return sp
}

// scaleOf is scale of the runs of a benchmark's metric.
func scaleOf(r map[string]result, name, metric string, by float64) spread {
	sp := scale(values(r, name, metric), by)
	sp.needs = []measurement{{name, metric}}
	return sp
}

// pair divides run i of one measurement by run i of another and spreads the
// quotients. go test runs a benchmark's sub-benchmarks in order, each its
// -count times, so run i of a tallybloom row and of its peer were measured
// within seconds of each other; the range shows how far the machine moved
// the ratio between runs.
func pair(num, den []float64) spread {
	if len(num) == 0 || len(num) != len(den) {
		return spread{median: math.NaN(), lo: math.NaN(), hi: math.NaN()}
	}
	q := make([]float64, len(num))
	for i := range num {
		q[i] = num[i] / den[i]
	}
	return spread{median: median(q), lo: slices.Min(q), hi: slices.Max(q), runs: len(q)}
}

// scale spreads the runs of one measurement divided by a constant.
func scale(values []float64, by float64) spread {
	return pair(values, slices.Repeat([]float64{by}, len(values)))
}

func values(results map[string]result, name, metric string) []float64 {
	return results[name][metric]
}

var libraries = []string{"tallybloom", "tallybloom-fixed", "tallybloom-large", "tallybloom-counters", "bits-and-blooms", "boom-counting", "boom-scalable", "blobloom", "dablooms"}

// target is one line of the targets: a measured ratio and its limit,
// for one way of running tallybloom.
type target struct {
	what    string
	as      string // how tallybloom ran: default, fixed, large pages or counters only
	ratio   spread
	atMost  float64 // the ratio must be at most this (0: see atLeast)
	atLeast float64
	why     string
}

// met judges the median ratio.
func (t target) met() bool {
	if math.IsNaN(t.ratio.median) {
		return false
	}
	if t.atMost > 0 {
		return t.ratio.median <= t.atMost
	}
	return t.ratio.median >= t.atLeast
}

// shown is the median ratio with two decimals, or more where two would
// round it across or onto its limit: the figure must agree with the verdict.
func (t target) shown() string {
	for prec := 2; ; prec++ {
		s := strconv.FormatFloat(t.ratio.median, 'f', prec, 64)
		v, _ := strconv.ParseFloat(s, 64)
		rounded := t
		rounded.ratio.median = v
		if rounded.met() == t.met() || prec == 6 {
			return s
		}
	}
}

// The ways tallybloom runs, as the targets table names them.
const (
	asDefault  = "default (chain, first sub-filter at 0.1%)"
	asFixed    = "fixed at 1%"
	asLarge    = "default with LargePages"
	asCounters = "fixed at 1%, counters only"
)

// Why a missed target is missed, shared by the rows of one target.
const (
	whyCache        = "lookups read the presence bits, one bit a counter, where the counters take four. Fixed at 1%% the presence bits of 1M keys take 1.35 MB, near bits-and-blooms' 1.2 MB of bits, and a lookup measures %.2fx bits-and-blooms' time in this run. By default the chain's first sub-filter is built for 0.1%%, so that the whole chain stays under 1%%: its presence bits take 2.3 MB, twice bits-and-blooms' room, and a lookup measures %.2fx (%.2fx with LargePages); on this machine (the memory latency rows) a dependent load costs %.0f ns within 1 MiB, %.0f ns within 4 MiB and %.0f ns within 8 MiB. With counters only a lookup reads the 5.4 MB of counters and measures %.2fx: the memory Config.CountersOnly saves is paid for here. In the cache (a filter of 20 000 keys, the 20K rows) a member lookup takes %.0f ns fixed and %.0f with counters only, against bits-and-blooms' %.0f: what is left at 1M is where the bytes come from"
	whyAdd          = "an Add does more than a plain filter's: under the writer's mutex it copies the key's 64-byte block into an undo record and checksums it, raises the key's counters and sets their presence bits, and commits a sequence number, which is what makes it exact after a crash. In the cache (a filter of 20 000 keys, the 20K rows) that takes %.0f ns fixed and %.0f with counters only, against bits-and-blooms' %.0f (%.2fx and %.2fx). At 1M the rest is the block's trip: the undo record reads the block before anything is written, and one Add's trip does not overlap the next one's, while bits-and-blooms' 1.2 MB of bits stay near the core. tallybloom's 6.7 MB (fixed) come from the last-level cache while other tenants of the machine leave it alone, and from memory when they do not"
	whyAddLatency   = ": in this run's memory latency rows a dependent load within 8 MiB took %.0f ns, and one from memory %.0f (the targets' rows say in how many runs other tenants held the cache)"
	whyAddTried     = ". Counted with callgrind, an Add fixed executes about 1 150 instructions and bits-and-blooms' about 785; docs/PERFORMANCE.md lists the steps that took instructions out and what was measured and left out (Adds: the mutex, PREFETCHW, other checksums, a TestAndAdd that draws a new key once), and a report run on this code with the last-level cache quieter, which met 1.5x fixed and with counters only (The reports)"
	whyAddBatch     = ". Adding in batches of 1024 (AddBatch, which takes the lock once a batch and asks for a group's blocks together) takes %.0f ns a key at 1M fixed, %.2fx bits-and-blooms' Add"
	whyBig          = "a lookup into one sub-filter reads one cache line, 16 bytes of presence bits (with counters only, the key's 64-byte block), where bits-and-blooms' reads seven lines that run in parallel. At 64M every way's line comes from memory, and a lookup costs that trip and a page walk, divided by how many lookups the processor keeps in flight at once. Fixed at 1%% (86 MB of presence bits) a lookup measures %.2fx bits-and-blooms' time, by default (150 MB) %.2fx, by default with LargePages %.2fx and with counters only (344 MB) %.2fx. The default and LargePages ways run the same code over the same bytes and differ only in the pages that map them: %.0f ns a lookup with 4 KiB pages against %.0f with 2 MiB pages in this run"
	whyBigWalk      = ": the difference is the page walk that a 4 KiB page adds to nearly every lookup at this size (on a virtual machine the walk crosses the guest's page tables and the host's)"
	whyBigNoWalk    = ": the page walk that a 4 KiB page adds to nearly every lookup at this size did not show, where the two ways met the machine at different moments (see the range)"
	whyBigRest      = ". LargePages takes the walk away where the kernel and the file system give a file 2 MiB pages; it is not the default because Flush then writes a changed 2 MiB page back whole. blobloom, one line a lookup in 88 MB, measures %.2fx: counted with callgrind, its lookup and hash take about 210 instructions, tallybloom's about 305 fixed, and fewer instructions a lookup keep more lookups in flight. With counters only the line comes from four times the bytes, through four times the pages: Config.CountersOnly trades lookups at this size for a fifth less memory. bits-and-blooms' own time at 64M moves between runs on a virtual machine, and these ratios with it (see the range); the section on lookups side by side below times both in the same moments, and docs/PERFORMANCE.md (Lookups) lists what was measured"
	whyBoomCounting = "BoomFilters' counting filter at 1M keys takes 4.8 MB, where tallybloom's lookups read 1.35 MB of presence bits (fixed). In the cache (a filter of 20 000 keys, the 20K rows) its lookup takes %.0f ns and its Add %.0f ns, against tallybloom's %.0f and %.0f fixed; 4x faster would be %.0f and %.0f ns, where hashing a key of 16 to 64 bytes alone takes tallybloom 6 to 12 ns and blobloom, one cache line and no counters, takes %.0f ns a lookup. A tallybloom Add also sets presence bits, seals an undo record and commits a sequence, which BoomFilters' does not"
	whyChain        = "the presence bits of the ten blocks are loaded together before any is tested, then four bits of each are tested without a branch, so that only the few sub-filters left need a whole test; what remains is one trip to memory plus a few ns of work per sub-filter"
	whyTenVsOne     = "one sub-filter of 100 000 keys stays in the cache and ten do not, so the ratio measures a trip to memory as much as the chain: a key never added needs the presence bits of its block in each of the ten, loaded together before any is tested, and then four bits of each are tested without a branch"
	whyBatch        = "ContainsBatch reads a byte at each end of every key of a group of 64, so that the keys' own cache misses are in flight together, hashes them in order of length, so that the hash's branches on the length are predicted, then loads every block of the group before testing any. In this run a single call takes %.0f ns a key and a batch %.0f, where a dependent load within 64 MiB takes %.0f ns and independent loads into 512 MiB %.1f ns each (the memory rows): where a single call takes less than a trip to memory, as with LargePages, which spares it the page walk, a batch has less to overlap. In the cache a batched lookup of keys of 16 to 64 bytes takes about 43 ns (BenchmarkContainsBatch in engine/), so at 64M a batch is bound by its instructions: in a profile the hash is about a third of it and drawing the key's presence bits another third. Hashing and warming each key in turn, groups of 16 to 256 keys, asking for a group's blocks with prefetches while the group before it is tested, and counting repeated counters while drawing the presence bits instead of a popcount after, were measured and were no faster"
	whyMirror       = "both mirror rates are bounded by a redis-server on the same two cores as the engine and the benchmark, so they move with Redis's share of those cores between runs (see the range)"
	whyParallel     = "lookups take no lock and write no shared cache line, so they scale with the cores the machine gives; on a shared virtual machine the second core is not always free"
	whyOpen         = "Open maps the file and reads its header and directory, whatever the file's size; a slow run is the machine's"
	whyBits         = "presence bits add one bit to every four of counters, and the rows of the ways that keep them count them: 1.25 times the counters' own bits. With counters only, a 64-byte block of 128 counters holds about 12 keys at p = 1% and the spread of keys over blocks costs 1.12x the ideal; at 0.1% (about 7 keys a block) 1.30x. Blocks of two cache lines (256 counters) were built and measured: 66.3 bits of counters per key at 0.1% (1.16x), but a key's counters then fall in either line, so a lookup of a key never added needs the second line half the time; a ten-sub-filter lookup went from about 350-400 to 690 ns and a 64M lookup from about 540 to 650 ns, too much for a lookup engine to pay for 11% of memory, so they were left out"
)

// targets are the targets as this run measured them; a load within
// 8 MiB slower than busy says other tenants held the cache (cacheBusy).
func targets(r map[string]result, busy float64) []target {
	ns := func(num, den string) spread {
		sp := pairOf(r, "ns/op", num, den)
		sp.held = heldRuns(r, busy, num, den)
		return sp
	}
	ideal := func(p float64) float64 { return 4 * 1.44 * math.Log2(1/p) }
	bits := func(lib string, p float64) spread {
		return scaleOf(r, "Contains/1M/"+lib+"/member", "bits/key", ideal(p))
	}
	batch := func(lib string) spread {
		return pairOf(r, "ns/key", "ContainsBatch/64M/"+lib+"/single", "ContainsBatch/64M/"+lib+"/batch")
	}
	vsBnb := func(size, lib string) float64 {
		return ns("Contains/"+size+"/"+lib+"/member", "Contains/"+size+"/bits-and-blooms/member").median
	}
	lookup64 := func(lib string) float64 { return median(values(r, "Contains/64M/"+lib+"/member", "ns/op")) }
	whyBig64 := sayf(whyBig, vsBnb("64M", "tallybloom-fixed"), vsBnb("64M", "tallybloom"), vsBnb("64M", "tallybloom-large"),
		vsBnb("64M", "tallybloom-counters"), lookup64("tallybloom"), lookup64("tallybloom-large"))
	if lookup64("tallybloom-large") < lookup64("tallybloom") {
		whyBig64 += whyBigWalk
	} else if lookup64("tallybloom-large") >= lookup64("tallybloom") {
		whyBig64 += whyBigNoWalk
	}
	whyBig64 += sayf(whyBigRest, vsBnb("64M", "blobloom"))
	latency := func(mib int) float64 { return median(values(r, fmt.Sprintf("MemoryLatency/MiB=%d", mib), "ns/op")) }
	cached := func(workload, lib string) float64 {
		name := "Add/20K/" + lib
		if workload == "Contains" {
			name = "Contains/20K/" + lib + "/member"
		}
		return median(values(r, name, "ns/op"))
	}
	whyCache1 := sayf(whyCache, vsBnb("1M", "tallybloom-fixed"), vsBnb("1M", "tallybloom"), vsBnb("1M", "tallybloom-large"),
		latency(1), latency(4), latency(8), vsBnb("1M", "tallybloom-counters"),
		cached("Contains", "tallybloom-fixed"), cached("Contains", "tallybloom-counters"), cached("Contains", "bits-and-blooms"))
	addFixed, addCounters, addBnb := cached("Add", "tallybloom-fixed"), cached("Add", "tallybloom-counters"), cached("Add", "bits-and-blooms")
	whyAdd1 := sayf(whyAdd, addFixed, addCounters, addBnb, addFixed/addBnb, addCounters/addBnb)
	if in8, in64 := latency(8), latency(64); !math.IsNaN(in8) && !math.IsNaN(in64) {
		whyAdd1 += sayf(whyAddLatency, in8, in64)
	}
	whyAdd1 += whyAddTried
	if batch := median(values(r, "AddBatch/1M/tallybloom-fixed", "ns/key")); !math.IsNaN(batch) {
		whyAdd1 += sayf(whyAddBatch, batch, batch/median(values(r, "Add/1M/bits-and-blooms", "ns/op")))
	}
	boomContains, boomAdd := cached("Contains", "boom-counting"), cached("Add", "boom-counting")
	whyBoomCounting1 := sayf(whyBoomCounting, boomContains, boomAdd, cached("Contains", "tallybloom-fixed"), addFixed,
		boomContains/4, boomAdd/4, cached("Contains", "blobloom"))
	whyBatchOf := func(lib string) string {
		perKey := func(kind string) float64 { return median(values(r, "ContainsBatch/64M/"+lib+"/"+kind, "ns/key")) }
		return sayf(whyBatch, perKey("single"), perKey("batch"), latency(64), median(values(r, "MemoryParallel/MiB=512", "ns/load")))
	}
	return []target{
		{"Contains, 1M, 1 sub-filter, vs bits-and-blooms Test", asDefault, ns("Contains/1M/tallybloom/member", "Contains/1M/bits-and-blooms/member"), 1.0, 0, whyCache1},
		{"Contains, 1M, 1 sub-filter, vs bits-and-blooms Test", asFixed, ns("Contains/1M/tallybloom-fixed/member", "Contains/1M/bits-and-blooms/member"), 1.0, 0, whyCache1},
		{"Contains, 1M, 1 sub-filter, vs bits-and-blooms Test", asCounters, ns("Contains/1M/tallybloom-counters/member", "Contains/1M/bits-and-blooms/member"), 1.0, 0, whyCache1},
		{"Add, 1M, vs bits-and-blooms Add", asDefault, ns("Add/1M/tallybloom", "Add/1M/bits-and-blooms"), 1.5, 0, whyAdd1},
		{"Add, 1M, vs bits-and-blooms Add", asFixed, ns("Add/1M/tallybloom-fixed", "Add/1M/bits-and-blooms"), 1.5, 0, whyAdd1},
		{"Add, 1M, vs bits-and-blooms Add", asCounters, ns("Add/1M/tallybloom-counters", "Add/1M/bits-and-blooms"), 1.5, 0, whyAdd1},
		{"Contains, 64M, vs bits-and-blooms Test", asDefault, ns("Contains/64M/tallybloom/member", "Contains/64M/bits-and-blooms/member"), 0.7, 0, whyBig64},
		{"Contains, 64M, vs bits-and-blooms Test", asFixed, ns("Contains/64M/tallybloom-fixed/member", "Contains/64M/bits-and-blooms/member"), 0.7, 0, whyBig64},
		{"Contains, 64M, vs bits-and-blooms Test", asLarge, ns("Contains/64M/tallybloom-large/member", "Contains/64M/bits-and-blooms/member"), 0.7, 0, whyBig64},
		{"Contains, 64M, vs bits-and-blooms Test", asCounters, ns("Contains/64M/tallybloom-counters/member", "Contains/64M/bits-and-blooms/member"), 0.7, 0, whyBig64},
		{"Add vs BoomFilters counting (speed-up)", asFixed, ns("Add/1M/boom-counting", "Add/1M/tallybloom-fixed"), 0, 4, whyBoomCounting1},
		{"Contains vs BoomFilters counting (speed-up)", asFixed, ns("Contains/1M/boom-counting/member", "Contains/1M/tallybloom-fixed/member"), 0, 4, whyBoomCounting1},
		{"Contains vs BoomFilters scalable, 10 sub-filters (speed-up)", asDefault, ns("Chain/subs=10/boom-scalable", "Chain/subs=10/tallybloom"), 0, 2, whyChain},
		{"Contains vs BoomFilters scalable, 10 sub-filters (speed-up)", asLarge, ns("Chain/subs=10/boom-scalable", "Chain/subs=10/tallybloom-large"), 0, 2, whyChain},
		{"Contains of non-members, 10 sub-filters vs 1", asDefault, ns("Chain/subs=10/tallybloom", "Chain/subs=1/tallybloom"), 4, 0, whyTenVsOne},
		{"Contains of non-members, 10 sub-filters vs 1", asLarge, ns("Chain/subs=10/tallybloom-large", "Chain/subs=1/tallybloom-large"), 4, 0, whyTenVsOne},
		{"ContainsBatch of 1024, 64M, throughput vs single calls", asDefault, batch("tallybloom"), 0, 1.5, whyBatchOf("tallybloom")},
		{"ContainsBatch of 1024, 64M, throughput vs single calls", asLarge, batch("tallybloom-large"), 0, 1.5, whyBatchOf("tallybloom-large")},
		{"Contains on all cores vs 1 (throughput)", asDefault, ns("ContainsParallel/1M/tallybloom/procs=1", fmt.Sprintf("ContainsParallel/1M/tallybloom/procs=%d", runtime.NumCPU())), 0, 1.8, whyParallel},
		{"Open, 4 GiB vs 1 MiB", asDefault, ns("Open/4GiB", "Open/1MiB"), 2, 0, whyOpen},
		{"Mirror: changes shipped to a local Redis, per second (x 200 000)", asDefault, scaleOf(r, "MirrorShip", "changes/s", 200_000), 0, 1, whyMirror},
		{"Mirror: keys checked from Redis by one process, per second (x 100 000)", asDefault, scaleOf(r, "RemoteCheck", "keys/s", 100_000), 0, 1, whyMirror},
		{"bits per key vs 4 x 1.44 x log2(1/p), p = 0.1%", asDefault, bits("tallybloom", 0.01*(1-0.9)), 1.25, 0, whyBits},
		{"bits per key vs 4 x 1.44 x log2(1/p), p = 1%", asFixed, bits("tallybloom-fixed", 0.01), 1.25, 0, whyBits},
		{"bits per key vs 4 x 1.44 x log2(1/p), p = 1%", asCounters, bits("tallybloom-counters", 0.01), 1.25, 0, whyBits},
	}
}

// unmeasured is the reason given for a target this run has no ratio for:
// how many runs measured what it needs, and what go test printed under
// those benchmarks' names (a skip says why there).
func unmeasured(r map[string]result, said map[string][]string, needs []measurement) string {
	var names, runs, printed []string
	for _, m := range needs {
		names = append(names, m.name)
		runs = append(runs, strconv.Itoa(len(values(r, m.name, m.metric))))
		if msgs := said[m.name]; len(msgs) > 0 {
			printed = append(printed, fmt.Sprintf("go test printed for %s: %q", m.name, strings.Join(msgs, "; ")))
		}
	}
	why := fmt.Sprintf("this run has no measurement for it: %s reported %s in %s runs", names[0], needs[0].metric, runs[0])
	if len(needs) == 2 {
		why = fmt.Sprintf("this run has no measurement for it: its ratio pairs run i of %s with run i of %s, which reported %s in %s runs and %s", names[0], names[1], needs[0].metric, runs[0], runs[1])
	}
	if len(printed) > 0 {
		why += "; " + strings.Join(printed, "; ")
	}
	return why
}

// shortLimit is the time short mode is meant to finish in on two cores.
const shortLimit = 5 * time.Minute

func write(r map[string]result, said map[string][]string, info runInfo, chart string) string {
	h, mode := info.h, info.mode
	var b strings.Builder
	fmt.Fprintf(&b, "# tallybloom against its peers\n\n")
	if info.built > 0 {
		fmt.Fprintf(&b, "Written by `go run ./cmd/report` (%s mode, the median of %d runs of %s each): the suite ran for %s, after %s compiling it. ", mode, info.count, info.benchtime, info.took.Round(time.Second), info.built.Round(time.Second))
	} else {
		fmt.Fprintf(&b, "Written by `go run ./cmd/report` (%s mode, the median of %d runs of %s each, %s in all). ", mode, info.count, info.benchtime, info.took.Round(time.Second))
	}
	if info.failed != "" {
		fmt.Fprintf(&b, "**go test failed (%s)**: this report is of the benchmarks that ran, and a target whose benchmarks failed or never ran is marked not measured, with what go test printed about them. ", info.failed)
	}
	if mode == "short" && info.took > shortLimit {
		fmt.Fprintf(&b, "**This run took longer than the %s short mode is meant to take**, on a machine slower or busier than the two cores it is sized for. ", shortLimit)
	}
	fmt.Fprintf(&b, "Every filter is configured for a 1%% false-positive rate; tallybloom's rate bounds its whole chain. ")
	fmt.Fprintf(&b, "The keys are generated before the timing and lie one after another in memory, walked in order, so that each is in the cache when a filter gets it, as a key a service has just read from a request is; the times are the filters', not a cache miss on the key. A benchmark cycles through 65 536 keys at 20K and 1M, and through 4 194 304 at 64M: enough that the lines they touch, 256 MiB in a filter that reads one line a key, are far more than the cache holds, so that a lookup goes to memory as one among billions of keys does. The 20K filters, of 20 000 keys, stay in the cache: what is left of a ratio once memory is out of it. ")
	if mode == "short" {
		fmt.Fprintf(&b, "In short mode the 64M filters are built for 64M keys and hold 8M.")
	}
	fmt.Fprintf(&b, "\n\n## Machine\n\n%s", h.about)
	if note := cacheNote(r, h.llc); note != "" {
		fmt.Fprintf(&b, " %s", note)
	}
	if note := largePagesNote(r); note != "" {
		fmt.Fprintf(&b, " %s", note)
	}
	fmt.Fprintf(&b, "\n\n")

	fmt.Fprintf(&b, "## Targets\n\n")
	fmt.Fprintf(&b, "tallybloom runs four ways: by default (a chain whose first sub-filter is built for 0.1%%, so that any number of sub-filters stays under 1%%), fixed (one sub-filter for the whole 1%%, the guarantee the plain filters give), by default with `Options.LargePages`, and fixed with `Config.CountersOnly`. All but the last keep presence bits, one bit a counter that lookups read instead of the counters, which take a quarter more memory; with counters only, lookups read the counters. Each target is shown for the ways it concerns.\n\n")
	fmt.Fprintf(&b, "A ratio is the median over the runs of run i of tallybloom against run i of its peer; the range beside it is the smallest and largest of those ratios, which shows how far this shared machine moves a ratio between runs. A target is judged on the median. Where other tenants of the machine held the last-level cache in some runs of a filter it would otherwise hold (see Machine), the range says in how many: those runs measure the neighbours as much as the filters.\n\n")
	fmt.Fprintf(&b, "| target | tallybloom | measured | over the runs | limit | |\n| --- | --- | --- | --- | --- | --- |\n")
	var missed []target
	for _, t := range targets(r, cacheBusy(r, h.llc)) {
		limit, verdict := fmt.Sprintf("at most %gx", t.atMost), "met"
		if t.atMost == 0 {
			limit = fmt.Sprintf("at least %gx", t.atLeast)
		}
		switch {
		case math.IsNaN(t.ratio.median):
			// A benchmark it needs failed or was skipped: the reason
			// would quote figures this run does not have.
			verdict = "**not measured**"
			t.why = unmeasured(r, said, t.ratio.needs)
			missed = append(missed, t)
		case !t.met():
			verdict = "**missed**"
			missed = append(missed, t)
		}
		measured, over := "", ""
		if !math.IsNaN(t.ratio.median) {
			measured, over = t.shown()+"x", fmt.Sprintf("%.2f-%.2fx", t.ratio.lo, t.ratio.hi)
		}
		if t.ratio.held > 0 {
			over += fmt.Sprintf(", cache held in %d of %d", t.ratio.held, t.ratio.runs)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", t.what, t.as, measured, over, limit, verdict)
	}
	if len(missed) > 0 {
		fmt.Fprintf(&b, "\nWhy the targets not met are missed:\n\n")
		// Each reason once, after every target it explains: the speed-ups
		// over BoomFilters' counting filter share one, as the two bits per
		// key rows do.
		var reasons []string
		whats := map[string][]string{}
		for _, t := range missed {
			if _, ok := whats[t.why]; !ok {
				reasons = append(reasons, t.why)
			}
			if !slices.Contains(whats[t.why], t.what) {
				whats[t.why] = append(whats[t.why], t.what)
			}
		}
		for _, why := range reasons {
			fmt.Fprintf(&b, "- %s: %s.\n", strings.Join(whats[why], "; "), why)
		}
	}

	fmt.Fprintf(&b, "\n## Lookups and adds\n\n![ns/op against filter size](%s)\n\n", chart)
	fmt.Fprintf(&b, "| workload | size | library | ns/op | vs bits-and-blooms | allocs/op | bits/key | measured false positives |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, size := range []string{"20K", "1M", "64M"} {
		for _, w := range []string{"Contains member", "Contains non-member", "Add"} {
			for _, lib := range libraries {
				name := "Add/" + size + "/" + lib
				if w != "Add" {
					name = "Contains/" + size + "/" + lib + "/" + strings.TrimPrefix(w, "Contains ")
				}
				if _, ok := r[name]; !ok {
					continue // skipped, and the text below says why
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %.1f | %s | %s | %s | %s |\n", w, size, lib,
					get(r, name, "ns/op"), optional(vsBitsAndBlooms(r, name), "%.2fx"), optional(get(r, name, "allocs/op"), "%.0f"),
					optional(get(r, strings.Replace(name, "Add/", "Contains/", 1)+suffix(w), "bits/key"), "%.1f"),
					optional(get(r, strings.Replace(name, "Add/", "Contains/", 1)+suffix(w), "fpr"), "%.4f"))
			}
		}
	}
	fmt.Fprintf(&b, "\nAt 20K and 1M an Add goes into a filter that starts empty. Since 2026-11-28 its pages are readied for stores before the timing (`Filter.Populate`), as those of a service's filter that has run a while are; before, the first few thousand adds of a run stored into each page first, and faulted. At 64M it goes into the filled filter, whose pages the fill touched: the steady state of a service. Into a new filter an add that is the first store into its 4 KiB page faults the page in, once a page. AddUntouched (below, one run however many the others have: each makes a 64M file and removes it, which takes seconds) adds to an empty 64M filter: early in a run nearly every add is such a store, later fewer are, so its time an add falls as runs grow longer. ")
	untouched := []float64{get(r, "AddUntouched/64M/tallybloom-fixed", "ns/op"), get(r, "AddUntouched/64M/tallybloom-counters", "ns/op"), get(r, "AddUntouched/64M/bits-and-blooms", "ns/op")}
	if slices.ContainsFunc(untouched, math.IsNaN) {
		fmt.Fprintf(&b, "This run has no AddUntouched row for every way it measures. ")
	} else {
		fmt.Fprintf(&b, "Here it is %.0f ns fixed (a page of counters and one of presence bits) and %.0f with counters only, against %.0f for bits-and-blooms' first stores into its new heap. ", untouched[0], untouched[1], untouched[2])
	}
	fmt.Fprintf(&b, "With `LargePages` such a page is 2 MiB, allocated and zeroed whole, which is not measured. A bulk load into a new filter readies the sub-filter's pages first, in one call (`Filter.Populate`, `tallybloom add --populate`; docs/PERFORMANCE.md, New filters), and its adds then fault no page.%s\n", faultNote(r))
	b.WriteString(dabloomsNote(r, h))
	b.WriteString(sideBySide(r))
	fmt.Fprintf(&b, "\n## Everything else\n\n")
	removers := "BoomFilters' counting filter is the only peer that removes"
	if _, ok := r["Remove/1M/dablooms"]; ok {
		removers = "BoomFilters' counting filter and dablooms are the peers that remove"
	}
	fmt.Fprintf(&b, "TestAndAdd is of keys the filter holds, a lookup that hits; TestAndAddNew of keys it has not seen, a lookup that misses and then an add. %s. A ratio is to the row of bits-and-blooms with the same workload and size, where there is one.\n\n", removers)
	fmt.Fprintf(&b, "| benchmark | ns/op | vs bits-and-blooms | allocs/op | other |\n| --- | --- | --- | --- | --- |\n")
	names := make([]string, 0, len(r))
	for name := range r {
		if !strings.HasPrefix(name, "Contains/") && !strings.HasPrefix(name, "Add/") && !strings.HasPrefix(name, "ContainsSideBySide/") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		var other []string
		for _, metric := range append([]string{"ns/key", "ns/load", "changes/s", "keys/s"}, faultMetrics...) {
			if v := get(r, name, metric); !math.IsNaN(v) {
				format := "%.1f %s"
				if strings.HasPrefix(metric, "faults/") {
					format = "%.3f %s" // a few in a thousand matter
				}
				other = append(other, fmt.Sprintf(format, v, metric))
			}
		}
		fmt.Fprintf(&b, "| %s | %.1f | %s | %s | %s |\n", name, get(r, name, "ns/op"), optional(vsBitsAndBlooms(r, name), "%.2fx"),
			optional(get(r, name, "allocs/op"), "%.0f"), strings.Join(other, ", "))
	}
	return b.String()
}

// faultMetrics are the page faults the benchmarks that store report: per
// op, and per key for a batch.
var faultMetrics = []string{"faults/op", "faults/key"}

// faultNote names the timed stores that faulted on one op in a hundred or
// more, where the run counted faults: the faults are in their times.
// AddUntouched's adds are first stores, which fault by design.
func faultNote(r map[string]result) string {
	var counted bool
	var rows []string
	for _, name := range slices.Sorted(maps.Keys(r)) {
		if strings.HasPrefix(name, "AddUntouched/") {
			continue
		}
		for _, metric := range faultMetrics {
			v := get(r, name, metric)
			if math.IsNaN(v) {
				continue
			}
			counted = true
			if v >= 0.01 {
				rows = append(rows, fmt.Sprintf("%s (%.2f %s)", name, v, metric))
			}
		}
	}
	if !counted {
		return ""
	}
	note := " A store into a page the kernel has written back since the page last changed faults too, and Linux writes a file back once it has been dirty for 30 s and every few seconds after while it stays so: before its first run, a benchmark that stores into a filled filter writes back what the benchmarks before it stored and then stores into the pages its timing will, so that its runs, seconds later, find them dirty. The benchmarks that store count the process's faults (faults/op, faults/key for a batch); "
	if len(rows) == 0 {
		return note + "in this run none of their timings faulted on one op in a hundred."
	}
	return note + "in this run these timings faulted on one op in a hundred or more, and their times hold those faults: " + strings.Join(rows, ", ") + "."
}

// dabloomsNote says how dablooms was measured, or why it was not.
func dabloomsNote(r map[string]result, h host) string {
	if _, ok := r["Contains/1M/dablooms/member"]; !ok {
		why := h.noDablooms
		if why == "" {
			why = "the bench ran without its dablooms build"
		}
		return fmt.Sprintf("\ndablooms, bitly's C library that tallybloom succeeds, was not measured in this run: %s.\n", why)
	}
	return fmt.Sprintf("\ndablooms is bitly's C library that tallybloom succeeds, at its last release (v0.9.1), compiled from the source the Go module proxy serves, with the -O2 of its own Makefile. "+
		"It is called through cgo, as a Go service would call it: every add, lookup and remove crosses from Go into C, which costs %.0f ns a call on this machine (CgoCall, below). "+
		"It is given a rate of 2%%, so that its one sub-filter is built for 1%% as the plain filters are: it builds its first sub-filter for half the rate it is given (its tightening ratio is 0.5), and every key here has one id, for which it never opens a second. "+
		"It keeps 4-bit counters and no presence bits, and a lookup of a key it holds reads seven of them at 1%%, each in a cache line of its own. "+
		"An add that finds a counter at 15 writes a line to C's stderr; the benchmarks add the same keys many times over at 20K and 1M, and those lines go to /dev/null.%s\n",
		figure(get(r, "CgoCall", "ns/op")), dabloomsChain(r))
}

// dabloomsChain is what the report says of dablooms' chains and
// test-and-add, where they were measured.
func dabloomsChain(r map[string]result) string {
	var b strings.Builder
	if _, ok := r["Chain/subs=10/dablooms"]; ok {
		var theirs, ours, times []any
		for _, subs := range []string{"1", "5", "10"} {
			dab, tally := "Chain/subs="+subs+"/dablooms", "Chain/subs="+subs+"/tallybloom"
			theirs = append(theirs, get(r, dab, "ns/op"))
			ours = append(ours, get(r, tally, "ns/op"))
			times = append(times, pair(values(r, dab, "ns/op"), values(r, tally, "ns/op")).median)
		}
		fmt.Fprintf(&b, " In the chains (Chain, below) it is built as tallybloom is, every sub-filter full (its sub-filters for 1%%, 0.5%%, 0.25%% and so on, tallybloom's for 0.1%%, 0.09%% and so on), and it hashes a key again in every sub-filter it looks in: a lookup of a non-member took %.0f, %.0f and %.0f ns through 1, 5 and 10 sub-filters, against tallybloom's %.0f, %.0f and %.0f by default: %.2fx, %.2fx and %.2fx tallybloom's time (medians of the paired runs).",
			slices.Concat(theirs, ours, times)...)
	}
	if _, ok := r["TestAndAdd/1M/dablooms"]; ok {
		b.WriteString(" It has no test-and-add: its TestAndAdd rows are a lookup and, for a key it lacks, an add, two calls into C, as its user would write it.")
	}
	return b.String()
}

// sideBySide is the section on BenchmarkContainsSideBySide: each way's
// lookup at 64M timed in blocks that alternate with bits-and-blooms', beside
// the ratio of the two measured one after the other, which the targets use.
func sideBySide(r map[string]result) string {
	var rows strings.Builder
	for _, lib := range []string{"tallybloom", "tallybloom-fixed", "tallybloom-large", "tallybloom-counters"} {
		name := "ContainsSideBySide/64M/" + lib
		if _, ok := r[name]; !ok {
			continue
		}
		alternating := pair(values(r, name, "tally-ns"), values(r, name, "peer-ns"))
		alone := pair(values(r, "Contains/64M/"+lib+"/member", "ns/op"), values(r, "Contains/64M/bits-and-blooms/member", "ns/op"))
		fmt.Fprintf(&rows, "| %s | %.1f | %.1f | %.2fx | %.2f-%.2fx | %.2fx |\n", lib, get(r, name, "tally-ns"), get(r, name, "peer-ns"),
			alternating.median, alternating.lo, alternating.hi, alone.median)
	}
	if rows.Len() == 0 {
		return ""
	}
	return "\n### Contains at 64M, side by side with bits-and-blooms\n\n" +
		"The targets compare lookups measured one benchmark after the other, as Go benchmarks are, each filter alone on the machine for its run. " +
		"ContainsSideBySide times the same keys in blocks of 16 384 that alternate between a tallybloom filter and bits-and-blooms', so that both meet the same moments of this shared machine, and each block of one filter's lookups takes the other's lines, and the lines of its page tables, out of the caches, much as a service's other work may between its lookups. " +
		"With 4 KiB pages a lookup at 64M walks the page tables for nearly every key, and alone on the machine a filter finds its page-table entries in the cache; side by side it finds fewer of them. " +
		"A lookup of one line a key waits for that walk, where bits-and-blooms' seven lines a key wait for theirs together; with LargePages there is little to walk.\n\n" +
		"| tallybloom | ns a lookup | bits-and-blooms, ns a lookup | ratio | over the runs | ratio alone (the target's) |\n| --- | --- | --- | --- | --- | --- |\n" +
		rows.String()
}

// vsBitsAndBlooms is the ns/op of the benchmark name against the one that
// differs from it only in naming bits-and-blooms as its library, NaN where
// there is none.
func vsBitsAndBlooms(r map[string]result, name string) float64 {
	parts := strings.Split(name, "/")
	for i, part := range parts {
		if slices.Contains(libraries, part) {
			parts[i] = "bits-and-blooms"
			return get(r, name, "ns/op") / get(r, strings.Join(parts, "/"), "ns/op")
		}
	}
	return math.NaN()
}

// suffix maps an Add row to the Contains row that carries its filter's size
// metrics.
func suffix(workload string) string {
	if workload == "Add" {
		return "/member"
	}
	return ""
}

// figure is a measured number in the report's sentences: formatted as a
// float64 is, or "(not measured)" where the run has none (NaN), as where a
// benchmark failed, rather than "NaN".
type figure float64

func (v figure) Format(f fmt.State, verb rune) {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		fmt.Fprint(f, "(not measured)")
		return
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), float64(v))
}

// sayf is fmt.Sprintf of a sentence whose arguments are all figures.
func sayf(format string, vs ...float64) string {
	args := make([]any, len(vs))
	for i, v := range vs {
		args[i] = figure(v)
	}
	return fmt.Sprintf(format, args...)
}

func optional(v float64, format string) string {
	if math.IsNaN(v) {
		return ""
	}
	return fmt.Sprintf(format, v)
}

// host is what the report says of the machine it ran on.
type host struct {
	about string
	llc   int64 // bytes of the last-level cache, 0 if unknown
	// noDablooms is why dablooms could not be built here, "" if it was.
	noDablooms string
}

func thisMachine() host {
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	memory := ""
	if info, err := os.ReadFile("/proc/meminfo"); err == nil {
		first, _, _ := strings.Cut(string(info), "\n")
		memory = ", " + strings.Join(strings.Fields(first)[1:], " ") + " of memory"
	}
	caches := cpuCaches("/sys/devices/system/cpu/cpu0/cache")
	about := fmt.Sprintf("%s, %d cores%s%s, %s %s/%s.", cpuModel(string(cpuinfo)), runtime.NumCPU(), memory, cachesText(caches), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	var llc int64
	for _, c := range caches {
		llc = max(llc, c.bytes)
	}
	return host{about: about, llc: llc}
}

// cpuModel names the processor from /proc/cpuinfo's text: its model name
// and, where given (x86), its family and model numbers, which tell apart
// processors a virtual machine names alike ("Intel(R) Xeon(R) Processor").
func cpuModel(cpuinfo string) string {
	name, family, model := "", "", ""
	for _, line := range strings.Split(cpuinfo, "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			if line == "" && name != "" {
				break // the first processor is described
			}
			continue
		}
		value = strings.TrimSpace(value)
		switch strings.TrimSpace(key) {
		case "model name":
			name = value
		case "cpu family":
			family = value
		case "model":
			model = value
		}
	}
	switch {
	case name == "":
		return "unknown CPU"
	case family != "" && model != "":
		return fmt.Sprintf("%s (family %s, model %s)", name, family, model)
	}
	return name
}

// cache is one of the first CPU's caches.
type cache struct {
	name  string // L1d, L1i, L2, L3
	bytes int64
}

// cpuCaches lists the caches of the first CPU from sysfs's description of
// them under dir (Linux), in the order sysfs numbers them, or nothing.
func cpuCaches(dir string) []cache {
	indexes, _ := filepath.Glob(filepath.Join(dir, "index*"))
	var caches []cache
	for _, index := range indexes {
		read := func(name string) string {
			text, _ := os.ReadFile(filepath.Join(index, name))
			return strings.TrimSpace(string(text))
		}
		size, unit := read("size"), int64(1)
		if n, ok := strings.CutSuffix(size, "K"); ok {
			size, unit = n, 1<<10
		} else if n, ok := strings.CutSuffix(size, "M"); ok {
			size, unit = n, 1<<20
		}
		n, err := strconv.ParseInt(size, 10, 64)
		if err != nil {
			continue
		}
		name := "L" + read("level")
		switch read("type") {
		case "Data":
			name += "d"
		case "Instruction":
			name += "i"
		}
		caches = append(caches, cache{name: name, bytes: n * unit})
	}
	return caches
}

// cachesText is the caches of a core for the machine's line: ", caches
// L1d 48 KiB, L2 2 MiB, L3 260 MiB", or "".
func cachesText(caches []cache) string {
	var parts []string
	for _, c := range caches {
		size := fmt.Sprintf("%d KiB", c.bytes>>10)
		if c.bytes >= 1<<20 && c.bytes%(1<<20) == 0 {
			size = fmt.Sprintf("%d MiB", c.bytes>>20)
		}
		parts = append(parts, c.name+" "+size)
	}
	if len(parts) == 0 {
		return ""
	}
	return ", caches " + strings.Join(parts, ", ")
}

// busyCache is the share of a load from memory above which a load within
// 8 MiB says the last-level cache did not hold its 8 MiB: on a quiet
// machine with a cache of 16 MiB or more it is about a sixth.
const busyCache = 0.4

// cacheBusy is the time of a load within 8 MiB above which other tenants
// of the machine held the shared last-level cache, or +Inf where a slow
// load is no sign of them: a cache under 16 MiB need not hold 8 MiB, and
// without a load from memory there is nothing to compare with.
func cacheBusy(r map[string]result, llc int64) float64 {
	fromMemory := median(values(r, "MemoryLatency/MiB=64", "ns/op"))
	if llc < 16<<20 || math.IsNaN(fromMemory) {
		return math.Inf(1)
	}
	return busyCache * fromMemory
}

// heldRuns is in how many runs of the benchmarks named a load within 8 MiB
// measured after the timing (cache-ns) took more than busy: the runs in
// which other tenants held the cache.
func heldRuns(r map[string]result, busy float64, names ...string) int {
	held := 0
	for i := range len(values(r, names[0], "ns/op")) {
		for _, name := range names {
			if probes := values(r, name, "cache-ns"); i < len(probes) && probes[i] > busy {
				held++
				break
			}
		}
	}
	return held
}

// largePagesNote says how much of the 64M filter with LargePages the
// kernel mapped with 2 MiB pages: where it mapped little, the LargePages
// rows measure 4 KiB pages.
func largePagesNote(r map[string]result) string {
	shares := values(r, "Contains/64M/tallybloom-large/member", "large-share")
	if len(shares) == 0 {
		return ""
	}
	return fmt.Sprintf("With `LargePages` the kernel mapped %.0f%% of the 64M filter's counters and presence bits with 2 MiB pages (%.0f-%.0f%% over the runs).",
		100*median(shares), 100*slices.Min(shares), 100*slices.Max(shares))
}

// cacheNote gives the memory latency the run measured and says how often
// other tenants of the machine held the shared last-level cache: a cache
// that could hold 8 MiB answered loads within 8 MiB near as slowly as
// memory. Every benchmark of a filter such a cache holds measures it after
// its timing; so do the memory latency rows. Where the rows found 8 MiB
// held and most probes did not, it says the two disagree rather than
// blame other tenants.
func cacheNote(r map[string]result, llc int64) string {
	in8, in64 := values(r, "MemoryLatency/MiB=8", "ns/op"), values(r, "MemoryLatency/MiB=64", "ns/op")
	if len(in8) == 0 || len(in64) == 0 {
		return ""
	}
	var b strings.Builder
	if llc > 0 {
		fmt.Fprintf(&b, "The last-level cache holds %d MiB. ", llc>>20)
	} else {
		// Some virtual machines' kernels list no caches in sysfs.
		b.WriteString("The kernel names no caches here, so the report cannot say which filters the last-level cache would hold, nor in how many runs other tenants held it: the memory latency rows show what a load cost. ")
	}
	fmt.Fprintf(&b, "A dependent load within 8 MiB took %.0f ns (%.0f-%.0f over the runs), from 64 MiB %.0f ns.",
		median(in8), slices.Min(in8), slices.Max(in8), median(in64))
	busy := cacheBusy(r, llc)
	if math.IsInf(busy, 1) {
		return b.String()
	}
	probes, held := 0, 0
	count := func(loads []float64) {
		for _, ns := range loads {
			probes++
			if ns > busy {
				held++
			}
		}
	}
	count(in8)
	for _, res := range r {
		count(res["cache-ns"])
	}
	if held == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, " In %d of the %d times the run measured it (the memory latency rows, and after every run of a benchmark whose filter the cache would hold), a load within 8 MiB took more than %.0f%% of a load from memory",
		held, probes, busyCache*100)
	if median(in8) <= busy && 2*held > probes {
		// Seen on an Intel Xeon VM: rows of 39 to 45 ns, and probes of 70
		// to 150 ns after nearly every benchmark between them.
		b.WriteString(". The memory latency rows, though, which walk the 8 MiB for a quarter second and more, found it free, where most probes, each after a benchmark and three times round first, found it held: read the targets' counts of such runs as a warning, not as a measure of other tenants.")
	} else {
		b.WriteString(": other tenants of this machine held the shared cache then, and the targets say in how many of their runs.")
	}
	return b.String()
}

// drawChart plots Contains (members) ns/op against filter size.
func drawChart(r map[string]result, path string) error {
	p := plot.New()
	p.Title.Text = "Contains of members, 1% false positives"
	p.X.Label.Text = "filter built for (million keys)"
	p.Y.Label.Text = "ns/op"
	p.X.Scale = plot.LogScale{}
	sizes := []struct {
		label string
		x     float64
	}{{"20K", 0.02}, {"1M", 1}, {"64M", 64}}
	var ticks []plot.Tick
	for _, size := range sizes {
		ticks = append(ticks, plot.Tick{Value: size.x, Label: strconv.FormatFloat(size.x, 'g', -1, 64)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	var lines []any
	for _, lib := range libraries {
		var points plotter.XYs
		for _, size := range sizes {
			if v := get(r, "Contains/"+size.label+"/"+lib+"/member", "ns/op"); !math.IsNaN(v) {
				points = append(points, plotter.XY{X: size.x, Y: v})
			}
		}
		if len(points) > 0 {
			lines = append(lines, lib, points)
		}
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return err
	}
	// The axis spans every size, whichever were measured: points at one
	// size alone would leave it no width, and the plot would widen it
	// to 0, which a log scale cannot show.
	p.X.Min, p.X.Max = sizes[0].x, sizes[len(sizes)-1].x
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}
