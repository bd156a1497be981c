package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/spf13/cobra"

	"github.com/tallybloom/tallybloom/engine"
)

// changeCommand is add, remove or dedupe: they read keys and ids alike.
func changeCommand(verb string) *cobra.Command {
	var (
		id        uint64
		opts      keyOptions
		keepGoing bool
	)
	cmd := &cobra.Command{
		Use: verb + " FILE [KEY ...]",
		Short: map[string]string{"add": "Add keys", "remove": "Remove keys added before, with their ids",
			"dedupe": "Print the lines whose key is new, and add it"}[verb],
		Long: `With no KEY arguments, keys are read from standard input, one a line
(blank lines are skipped), streaming: the keys read are changed before the
command waits for more, so keys fed slowly (tail -f) take effect as they
come, and FILE is flushed once the input has waited --flush-when-idle, so
that a machine crash while it waits finds FILE clean. Interrupted (SIGINT,
SIGTERM), it changes the keys it has read, says how many, and exits 130 or
143. Every key gets --id (by default the second it is added at, in Unix
seconds: its insertion time), or, with --with-ids, the id before a tab:
ID<TAB>KEY. --url stores each key as a URL in canonical form, the form
check --rollup looks for: the host and the path a browser would ask for,
without scheme, port, user, query or fragment, with escapes, dot segments
and backslashes undone (spam.example/x/../%77in is spam.example/win).

A line that is not a key (not a URL with --url, not ID<TAB>KEY with
--with-ids, longer than 1 MiB) ends the command, the keys before it done.
With --keep-going it is reported and left out, the command goes on, and
exits 2 at the end.` + map[string]string{
			"add": "",
			"remove": `

Remove only keys that were added, with the id they were added with: removing
a key never added can remove other keys too (in any counting Bloom filter).
Exits 1 when some key was not found (nothing changed for it).`,
			"dedupe": `

dedupe prints each line (or KEY) whose key the filter did not hold, and adds
the key, in one step (TestAndAdd): the lines seen for the first time, as
far as the filter can tell. A new key that is a false positive is taken for
one seen before, at the filter's error rate. It is a uniq that remembers
across runs, for a click log, say: tail -F clicks | tallybloom dedupe
--with-ids clicks.tb > first-clicks.`,
		}[verb],
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usageError(cmd, errors.New("FILE is required"))
			}
			if idle, _ := cmd.Flags().GetDuration("flush-when-idle"); idle < 0 {
				return usageError(cmd, fmt.Errorf("--flush-when-idle %v is negative", idle))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// Without --id (or --with-ids) a key's id is the second it is
			// added at: its insertion time, which a feed that runs for
			// days needs, so that sub-filters follow the days.
			return change(cmd, verb, args[0], args[1:], id, !cmd.Flags().Changed("id"), opts, keepGoing)
		},
	}
	cmd.Flags().Uint64Var(&id, "id", 0, "id of every key (default: the second each key is added at, in Unix seconds)")
	cmd.Flags().BoolVar(&opts.withIDs, "with-ids", false, "read ID<TAB>KEY lines")
	cmd.Flags().BoolVar(&opts.asURL, "url", false, "keys are URLs, stored in canonical form")
	cmd.MarkFlagsMutuallyExclusive("id", "with-ids")
	keepGoingFlag(cmd, &keepGoing)
	largePagesFlag(cmd)
	flushWhenIdleFlag(cmd)
	if verb != "remove" {
		cmd.Flags().Bool("populate", false, "ready the newest sub-filter's pages for stores after the first keys (engine Filter.Populate), and each new sub-filter's in the background once it opens (Options.PopulateNewSubFilters): a load into a new filter runs several times as fast, and takes the sub-filter's whole room in memory at once")
	}
	return cmd
}

// change adds, removes or dedupes keys: each with id, or with idNow the
// second it is changed at, unless the lines give ids (opts.withIDs).
func change(cmd *cobra.Command, verb, path string, keys []string, id uint64, idNow bool, opts keyOptions, keepGoing bool) error {
	populate, _ := cmd.Flags().GetBool("populate")
	o := filterOptions(cmd, false)
	o.PopulateNewSubFilters = populate
	f, err := openFilter(path, o)
	if err != nil {
		return err
	}
	in, size := cmd.InOrStdin(), int64(-1)
	if file, ok := in.(*os.File); ok && len(keys) == 0 {
		if info, err := file.Stat(); err == nil && info.Mode().IsRegular() {
			size = info.Size()
		}
	}
	p := newProgress(cmd.ErrOrStderr(), verb, size)
	skipper := &lineSkipper{report: p.note, args: len(keys) > 0}
	if keepGoing {
		opts.skip = skipper.skip
	}
	idNow = idNow && !opts.withIDs
	batch := &changer{f: f, remove: verb == "remove", idNow: idNow, seen: map[string]struct{}{}}
	watch := newWatch(f, path, f.Stats(), id, opts.withIDs, idNow, p.note)
	watch.adds = verb != "remove"
	watch.populate = populate
	batch.looked = watch.look
	if verb == "dedupe" {
		batch.unique = bufio.NewWriter(cmd.OutOrStdout())
	}
	// Keys are changed a group at a time, and before each wait for more
	// input, so that keys fed slowly take effect as they come.
	reader := newKeyReader(p.reader(in), batch.flush)
	if idle, _ := cmd.Flags().GetDuration("flush-when-idle"); idle > 0 && len(keys) == 0 {
		// The engine flushes while the input waits; a flush that fails
		// is told then, not when the next key comes, which may be hours.
		defer reader.whileWaiting(idle, func() { watch.lookAtFlushes(f.Stats()) })()
	}
	var signalled atomic.Int32
	past := map[string]string{"add": "added", "remove": "removed", "dedupe": "added"}[verb]
	// finish changes the keys read, closes the file and sums up.
	finish := func(err error) error {
		// The keys read before a bad line are changed, as one at a time
		// they would have been; a change that fails among them came first.
		if flushErr := batch.flush(); flushErr != nil {
			err = flushErr
		}
		closeErr := f.Close()
		stopped := errors.Is(err, errStopped)
		switch {
		case errors.Is(err, engine.ErrChainFull):
			return fmt.Errorf("%w (the keys before it were %s and kept; drop-before makes room)", err, past)
		case err != nil && !stopped:
			return fmt.Errorf("%w (the keys before it were %s and kept)", err, past)
		case closeErr != nil:
			return closeErr
		}
		switch verb {
		case "add":
			p.summary("added %s (%d new)", counted(p.keys, "key"), batch.fresh)
		case "dedupe":
			p.summary("read %s, %d new (printed and added)", counted(p.keys, "key"), batch.fresh)
		default:
			p.summary("removed %s (%d not found)", counted(p.keys-batch.notFound, "key"), batch.notFound)
		}
		switch {
		case stopped:
			return &exitCode{code: 128 + int(signalled.Load()), err: fmt.Errorf("%w: the keys read were %s and kept", err, past)}
		case skipper.lines > 0:
			return skipper.err("the other keys were " + past)
		case batch.notFound > 0:
			return &exitCode{code: exitNo, err: fmt.Errorf("%d of %d keys not found; nothing changed for them", batch.notFound, p.keys)}
		}
		return nil
	}
	if len(keys) == 0 {
		// Interrupted, the command stops reading, changes what it read
		// and says how much: keys a pipe gave it are not lost.
		signals := make(chan os.Signal, 1)
		signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
		defer signal.Stop(signals)
		go func() {
			sig, ok := (<-signals).(syscall.Signal)
			if !ok {
				return
			}
			signalled.Store(int32(sig))
			if reader.stop() {
				// Waiting for input, with every key read changed: end
				// here, as the reading would not.
				os.Exit(exitStatus(cmd.ErrOrStderr(), finish(errStopped)))
			}
		}()
	}
	return finish(eachKey(keys, reader, opts, func(k keyItem) error {
		if !opts.withIDs {
			k.id = id
		}
		p.keys++
		return batch.change(k)
	}))
}

// changeGroup is how many keys add and remove hand the engine at once.
const changeGroup = 1024

// changer adds or removes keys a group at a time, with the engine's batch
// calls, counting what one call a key would count. An add counts a key as
// new if it was absent before its group and not earlier in its group. (One
// at a time, a key could also turn present by a false positive on the keys
// just before it in the same group; at a filter's error rate such keys are
// too few to count.)
type changer struct {
	f      *engine.Filter
	remove bool
	// idNow gives each group's keys the second the group is changed at as
	// their id: a group is changed at once, or before the command waits
	// for more input.
	idNow bool
	// unique, for dedupe, is where the lines of new keys go: each key is
	// tested and added in one step, in order, so that a key repeated
	// within a group is new only the first time.
	unique *bufio.Writer
	items  []keyItem
	keys   [][]byte
	ids    []uint64
	// results is, for each key of the group, whether it was present before
	// its group (add) or whether it was removed (remove).
	results  []bool
	seen     map[string]struct{}
	fresh    uint64 // keys added that were new
	notFound uint64 // keys to remove that their sub-filter did not hold
	// looked, if set, is called after each group is changed.
	looked func()
}

func (c *changer) change(k keyItem) error {
	c.items = append(c.items, k)
	if len(c.items) == changeGroup {
		return c.flush()
	}
	return nil
}

// flush changes the group. Whatever happens, the group is done with: after
// an error, its later keys are not changed, as one at a time they would not
// be.
func (c *changer) flush() error {
	if len(c.items) == 0 {
		return nil
	}
	if c.looked != nil {
		defer c.looked()
	}
	if c.idNow {
		now := uint64(time.Now().Unix())
		for i := range c.items {
			c.items[i].id = now
		}
	}
	if c.unique != nil {
		return c.dedupe()
	}
	c.keys, c.ids = c.keys[:0], c.ids[:0]
	for _, k := range c.items {
		// The engine only reads the keys.
		c.keys = append(c.keys, unsafe.Slice(unsafe.StringData(k.key), len(k.key)))
		c.ids = append(c.ids, k.id)
	}
	var err error
	if c.remove {
		c.results, err = c.f.RemoveBatch(c.keys, c.ids, c.results)
	} else {
		c.results = c.f.ContainsBatch(c.keys, c.results)
		err = c.f.AddBatch(c.keys, c.ids)
	}
	done := len(c.items)
	if batchErr, ok := errors.AsType[*engine.BatchError](err); ok {
		done = batchErr.Index
		err = fmt.Errorf("%v: %w", c.items[batchErr.Index].at, batchErr.Err)
	}
	if c.remove {
		for _, removed := range c.results[:done] {
			if !removed {
				c.notFound++
			}
		}
	} else {
		clear(c.seen)
		for i, k := range c.items[:done] {
			if _, again := c.seen[k.key]; !c.results[i] && !again {
				c.fresh++
			}
			c.seen[k.key] = struct{}{}
		}
	}
	c.items = c.items[:0]
	return err
}

// dedupe tests and adds the group's keys one by one, printing the lines of
// the new ones, and writes them out before the command waits for more.
func (c *changer) dedupe() error {
	defer func() { c.items = c.items[:0] }()
	for _, k := range c.items {
		held, err := c.f.TestAndAddString(k.key, k.id)
		if err != nil {
			return errors.Join(fmt.Errorf("%v: %w", k.at, err), c.unique.Flush())
		}
		if !held {
			c.fresh++
			c.unique.WriteString(k.text)
			c.unique.WriteByte('\n')
		}
	}
	return c.unique.Flush()
}

// chainWarnRoom is how few sub-filters short of the most a chain holds an
// add that opened one warns: eight days' notice for a chain that opens one
// a day.
const chainWarnRoom = 8

// nextWarnFill is how full the newest sub-filter is when an add warns that
// the disk has too little room for the next, which opens at the newest's
// capacity.
const nextWarnFill = 0.9

// watch warns, as a command changes keys, of what nothing else would say
// until someone reads stats, or an add fails: a flush made while the input
// waited (--flush-when-idle) that failed, which leaves the file to a
// machine crash; and, as an add or a dedupe runs, a sub-filter the keys
// fill past its capacity, whose false-positive rate is then above what it
// was built for, a chain that opened one of its last sub-filters, and a
// file system without room for the sub-filter the chain opens next. It
// looks after each group of keys, so that a feed that never ends (tail -F)
// hears of it when it happens, not when the feed stops; while the input
// waits it looks at the flushes every --flush-when-idle period.
type watch struct {
	f    *engine.Filter
	path string
	dir  string
	note func(line string)
	adds bool // the command adds keys
	// flushFailed is the failed flush last warned of, "" once one succeeds.
	flushFailed string
	// counts are the sub-filters' counts, by level, when the run began:
	// a sub-filter overfilled before it is warned of only if this run
	// adds to it, once.
	counts map[int]uint64
	warned map[uint64]bool // the first ids of the sub-filters warned of
	// why says why no new sub-filter took the keys, after the first
	// overfilled one.
	why  string
	subs int // how many sub-filters the chain held when last looked at
	// roomFor is the first id of the newest sub-filter whose successor's
	// room was looked at, once it was nearly full: once a sub-filter, as
	// planning one takes a third of a millisecond.
	roomFor    uint64
	roomLooked bool
	// populate readies the pages of the sub-filter that was newest when
	// the run began (--populate), at the first look, unless the first keys
	// opened a new one: firstNewest is its first id. The engine readies
	// the sub-filters the chain opens (Options.PopulateNewSubFilters).
	populate    bool
	firstNewest uint64
}

// newWatch watches f, of path, from before, the stats before the run; a
// key's id is id, or with idNow the second it is added at, unless the
// lines give ids (withIDs).
func newWatch(f *engine.Filter, path string, before engine.Stats, id uint64, withIDs, idNow bool, note func(string)) *watch {
	w := &watch{f: f, path: path, dir: filepath.Dir(path), note: note, counts: map[int]uint64{}, warned: map[uint64]bool{}, subs: len(before.SubFilters)}
	w.firstNewest = before.SubFilters[len(before.SubFilters)-1].FirstID
	for _, sub := range before.SubFilters {
		w.counts[sub.Level] = sub.Count
	}
	const grows = "  a full sub-filter gives way to a new one only for an id newer than every id it holds"
	switch {
	case before.Config.Fixed:
		w.why = "  a fixed filter never grows: make one with a larger --capacity"
	case idNow:
		w.why = grows + ", and a key's id is the second it was added at: more keys came in one second than a sub-filter holds; give keys growing ids with --with-ids, or the filter a larger --capacity"
	case !withIDs:
		w.why = fmt.Sprintf("%s, and every key had id %d: give keys growing ids with --with-ids", grows, id)
	default:
		w.why = grows + ", and a key with an older id goes to the sub-filter that owns it: give keys growing ids"
	}
	return w
}

func (w *watch) look() {
	s := w.f.Stats()
	w.lookAtFlushes(s)
	if w.adds {
		w.lookAtAdds(s)
	}
}

// populateFirst readies, with --populate, the pages of the sub-filter
// that was newest when the run began (engine Filter.Populate), once. A
// failure is told and the keys go on: populating only saves time.
func (w *watch) populateFirst(s engine.Stats) {
	if !w.populate {
		return
	}
	w.populate = false
	if s.SubFilters[len(s.SubFilters)-1].FirstID != w.firstNewest {
		return // the first keys opened a new one, which the engine readies
	}
	if err := w.f.Populate(); err != nil {
		w.note(fmt.Sprintf("warning: --populate: %v; the keys are added all the same", err))
	}
}

func (w *watch) lookAtFlushes(s engine.Stats) {
	failed := ""
	if s.FlushError != nil {
		failed = s.FlushError.Error()
	}
	if failed != "" && failed != w.flushFailed {
		w.note(fmt.Sprintf("warning: flushing %s while the input waited failed: %s; a machine crash before a flush succeeds leaves it unclean (it is tried again while the input waits, and at the end)", w.path, failed))
	}
	w.flushFailed = failed
}

func (w *watch) lookAtAdds(s engine.Stats) {
	for _, sub := range s.SubFilters {
		if !sub.Overfilled || sub.Count <= w.counts[sub.Level] || w.warned[sub.FirstID] {
			continue
		}
		w.note(fmt.Sprintf("warning: the sub-filter of ids from %d holds %d keys, %.0f%% of the %d it was built for: its false-positive rate is about %.2g, where it was built for %.2g",
			sub.FirstID, sub.Count, 100*float64(sub.Count)/float64(sub.Capacity), sub.Capacity, sub.ExpectedFalsePositiveRate(), sub.ErrorRate))
		if len(w.warned) == 0 {
			w.note(w.why)
		}
		w.warned[sub.FirstID] = true
	}
	n := len(s.SubFilters)
	if n > w.subs && n >= engine.MaxSubFilters-chainWarnRoom {
		w.note(fmt.Sprintf("warning: the chain holds %d of the %d sub-filters it can; once it holds all and the newest is full, adds fail until drop-before retires old ones", n, engine.MaxSubFilters))
	}
	w.subs = n
	w.populateFirst(s)
	newest := s.SubFilters[n-1]
	if float64(newest.Count) < nextWarnFill*float64(newest.Capacity) || (w.roomLooked && w.roomFor == newest.FirstID) {
		return
	}
	w.roomFor, w.roomLooked = newest.FirstID, true
	if why, ok := noRoomForNext(nextOf(w.f, w.dir)); ok {
		w.note("warning: " + why)
	}
}
