package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tallybloom/tallybloom/engine"
)

// Options tune a Mirror. A nil *Options, or a zero field, means the
// default; Validate says what else cannot be used.
type Options struct {
	// MaxQueue is the number of changes queued for Redis before the mirror
	// gives up on them and makes a full copy instead. From then on it marks
	// the blocks changes touch, one bit a block, rather than queueing
	// them; if Redis kept the mirror's copy, the full copy starts from it,
	// cloned inside Redis, and writes only the blocks changed since. A full
	// copy does not queue the changes made while it is written either, so
	// the queue need only hold the changes of an outage of Redis the mirror
	// should outlive without a copy. A queued add or remove takes about 200
	// bytes. Default 1 000 000.
	MaxQueue int
	// BatchSize is the number of changes one script applies. Default 512.
	BatchSize int
	// PartBytes is the largest counter string, a multiple of 64 up to
	// Redis's limit of 512 MiB. Default 32 MiB. Two calls hold Redis,
	// which answers nothing else meanwhile, for as long as a part takes to
	// write in memory: filling a new sub-filter's part (see the package
	// doc) and cloning a part of the copy Redis holds into a new copy
	// (COPY). On a small machine that is about 20 ms for 32 MiB and 0.15 s
	// for 256 MiB. Larger parts make fewer keys; checkers that cannot wait
	// that long want smaller ones.
	PartBytes uint64
	// Timeout bounds each call to Redis. Default 5 s.
	Timeout time.Duration
	// Backoff is the first wait after a failed call; it doubles up to 5 s.
	// Default 50 ms.
	Backoff time.Duration
	// ClaimTTL is how long the writer's claim on the name outlives its
	// last call to Redis (see ErrNameTaken): a process killed without
	// Close holds the name this long, and a writer away from Redis this
	// long may lose it to another. An idle Mirror renews it three times
	// in that time. Default 10 s; at least 100 ms.
	ClaimTTL time.Duration
	// MaxHold is the longest the writer waits for one reader's hold on
	// its copy (see the package's Reading): while a Pull or a Restore
	// holds it, changes wait in the queue and Redis's copy, the one
	// checkers read, stays as it was. Past MaxHold the writer cuts the
	// hold and ships; the read fails with ErrCopyChanging, and no reader
	// holds the copy for MaxHold after (or as long as the hold would have
	// lasted, if longer). Default 1 minute, in which a reader on the same
	// machine as Redis reads several GB.
	MaxHold time.Duration

	// holdBytes is the most a full copy's catch-up reads under one hold of
	// the filter's lock, a multiple of 64; tests lower it.
	holdBytes uint64
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.MaxQueue == 0 {
		r.MaxQueue = 1_000_000
	}
	if r.BatchSize == 0 {
		r.BatchSize = 512
	}
	if r.PartBytes == 0 {
		r.PartBytes = 32 << 20
	}
	if r.Timeout == 0 {
		r.Timeout = 5 * time.Second
	}
	if r.Backoff == 0 {
		r.Backoff = 50 * time.Millisecond
	}
	if r.holdBytes == 0 || r.holdBytes%blockBytes != 0 {
		r.holdBytes = holdBytes
	}
	if r.ClaimTTL == 0 {
		r.ClaimTTL = claimTTL
	}
	if r.MaxHold == 0 {
		r.MaxHold = time.Minute
	}
	return r
}

// maxPartBytes is the longest string Redis holds.
const maxPartBytes = 512 << 20

// Validate reports every problem with o at once: a negative count or
// duration, parts that are not whole blocks or longer than Redis holds, a
// claim too short to be renewed.
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...))
	}
	if o.MaxQueue < 0 {
		bad("MaxQueue %d is negative", o.MaxQueue)
	}
	if o.BatchSize < 0 {
		bad("BatchSize %d is negative", o.BatchSize)
	}
	if o.PartBytes%64 != 0 || o.PartBytes > maxPartBytes {
		bad("PartBytes %d is not a multiple of 64 up to %d", o.PartBytes, uint64(maxPartBytes))
	}
	if o.Timeout < 0 {
		bad("Timeout %v is negative", o.Timeout)
	}
	if o.Backoff < 0 {
		bad("Backoff %v is negative", o.Backoff)
	}
	if o.ClaimTTL < 0 || o.ClaimTTL > 0 && o.ClaimTTL < minClaimTTL {
		bad("ClaimTTL %v is under %v", o.ClaimTTL, minClaimTTL)
	}
	if o.MaxHold < 0 {
		bad("MaxHold %v is negative", o.MaxHold)
	}
	return errors.Join(errs...)
}

// Stats describe a Mirror at one moment.
type Stats struct {
	Shipped    uint64 // sequence of the last change sent to Redis
	Acked      uint64 // sequence Redis holds
	QueueDepth int    // changes waiting for Redis
	Recopies   uint64 // full copies made live
	Resends    uint64 // batches Redis had already applied
	LastError  string // the last failure, "" after a success
	// RecopyReason says why the last full copy was written.
	RecopyReason string
	// Copying reports a full copy being written: CopiedBytes of its
	// CopyBytes of counters are written (none for a copy started from the
	// one Redis holds), and ChangedBlocks blocks of 64 bytes changed since
	// wait to be read again before it becomes live.
	Copying       bool
	CopyBytes     uint64
	CopiedBytes   uint64
	ChangedBlocks int
	// Held reports that the last batch found a reader holding the copy (a
	// Pull or a Restore of a copy larger than one call reads, sent back
	// by changes): until its read ends, changes wait in the queue.
	Held bool
	// HoldsCut counts the holds the mirror stopped waiting for, at
	// Options.MaxHold.
	HoldsCut uint64
}

// Mirror ships a filter's committed changes to Redis.
type Mirror struct {
	f    *engine.Filter
	r    Redis
	keys keys
	opts Options
	// owner is this mirror's claim on the name.
	owner owner

	// mu guards queue, needCopy, stats and closed; the engine's OnCommit and the
	// shipper meet here.
	mu struct {
		sync.Mutex
		queue    queue
		needCopy bool
		// copyReason is why the next full copy is needed.
		copyReason string
		// abandoned is the sequence of the last change the queue gave up
		// on when it overflowed.
		abandoned uint64
		// tracking records the blocks changes touch while a full copy is
		// written, in place of queueing the changes; nil otherwise.
		tracking *dirty
		// finishing: the copy's last catch-up has begun, and changes are
		// queued as well as tracked, those after lastSeq at that moment.
		finishing bool
		// lastSeq is the sequence of the last change enqueue saw.
		lastSeq uint64
		// gaveUp holds the changes the queue gave up on: the next full
		// copy marks the blocks they touched, if it starts from the copy
		// Redis holds (copyAll).
		gaveUp [][]change
		stats  Stats
		// lastErr is the last failure, stats.LastError's error.
		lastErr error
		acked   *sync.Cond // broadcast when stats.Acked moves, or closed
		closed  bool       // Close is done
	}
	// slab is room for the queued changes' bytes; enqueue's alone.
	slab slab
	// outline is f.Stats, what a full copy starts from; tests replace it to
	// change the filter just before or after a copy starts.
	outline func() engine.Stats
	// lastRound, when not nil, runs as a copy's last round begins, after it
	// took the blocks to read and before it reads them: tests change the
	// filter there.
	lastRound func()
	// stopFeed ends the filter's calls to enqueue.
	stopFeed func()
	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	// ctx ends with Close, so that a copy in progress stops with it.
	ctx    context.Context
	cancel context.CancelFunc

	// The shipper goroutine alone uses these: what the copy it ships to
	// is, the live one, or a full copy being written, and room to build a
	// script's arguments in.
	gen     uint64
	seq     uint64
	subs    []engine.SubFilterStats
	scratch opScratch
}

// Attach starts mirroring f into Redis under name: a full copy first (what
// Redis holds is not known), then every committed change. f must be open
// for writing; the mirror ends with Close, before f closes. A filter may
// have several mirrors, to several Redis deployments or names, each fed
// every change through Filter.OnCommit.
func Attach(f *engine.Filter, r Redis, name string, opts *Options) (*Mirror, error) {
	k, o, err := checkArgs(r, name, opts)
	if err := errors.Join(filterGiven(f), err); err != nil {
		return nil, err
	}
	m := &Mirror{f: f, r: timed{r, o.Timeout}, keys: k, opts: o, owner: newOwner(o.ClaimTTL), outline: f.Stats,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.mu.acked = sync.NewCond(&m.mu)
	m.mu.needCopy, m.mu.copyReason = true, "attached: what Redis holds is not known"
	seq, stopFeed, err := f.OnCommit(m.enqueue)
	if err != nil {
		m.cancel()
		return nil, err
	}
	m.stopFeed = stopFeed
	m.mu.Lock()
	m.mu.lastSeq = max(m.mu.lastSeq, seq) // changes since may have come
	m.mu.Unlock()
	go m.run()
	m.poke()
	return m, nil
}

// checkArgs checks a writer's Redis, name and options, as Attach and Push
// both begin, reporting every problem at once, and returns the name's keys
// and the options with their defaults.
func checkArgs(r Redis, name string, opts *Options) (keys, Options, error) {
	k, err := target(r, name)
	if err := errors.Join(err, opts.Validate()); err != nil {
		return keys{}, Options{}, err
	}
	return k, opts.withDefaults(), nil
}

// enqueue copies a committed change into the queue, or while a full copy
// is written records the blocks it touched. It runs under the engine's
// lock, so it never waits for Redis.
func (m *Mirror) enqueue(c *engine.Change) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.lastSeq = c.Seq
	if m.mu.tracking == nil && m.mu.queue.len() >= m.opts.MaxQueue {
		// Too far behind: a full copy will carry these changes, and the
		// blocks of those from now on are marked, not queued.
		m.mu.abandoned = c.Seq - 1
		m.mu.queue.each(func(waiting []change) bool {
			m.mu.gaveUp = append(m.mu.gaveUp, waiting)
			return true
		})
		m.mu.queue.abandon()
		m.mu.tracking = &dirty{}
		m.mu.needCopy = true
		m.mu.copyReason = fmt.Sprintf("%d changes waited for Redis, the most Options.MaxQueue keeps", m.opts.MaxQueue)
		m.mu.stats.QueueDepth = 0
		m.poke()
	}
	if d := m.mu.tracking; d != nil {
		d.markWrites(c.Counters)
		if !m.mu.finishing {
			return // the copy reads these blocks again
		}
	}
	if m.mu.queue.len() >= m.opts.MaxQueue {
		// Tracked as well: the copy's catch-up begins its last round again.
		m.mu.abandoned = c.Seq - 1
		m.mu.queue.abandon()
	}
	ch := change{seq: c.Seq, dir: append([]engine.SubFilterStats(nil), c.Directory...)} // nil stays nil
	ch.counters = m.slab.newWrites(len(c.Counters))
	for i, w := range c.Counters {
		ch.counters[i] = engine.CounterWrite{Level: w.Level, Offset: w.Offset, Bytes: m.slab.copyBytes(w.Bytes)}
	}
	if c.Tallies != nil {
		ch.tallies, ch.hasTallies = *c.Tallies, true
	}
	m.mu.queue.push(ch)
	m.mu.stats.QueueDepth = m.mu.queue.len()
	m.poke()
}

func (m *Mirror) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// run ships until Close.
func (m *Mirror) run() {
	defer close(m.done)
	backoff := m.opts.Backoff
	for {
		select {
		case <-m.stop:
			return
		case <-m.wake:
		case <-time.After(m.opts.ClaimTTL / 3):
			m.record(m.renew())
		}
		for {
			progressed, err := m.step()
			m.record(err)
			if err != nil {
				select {
				case <-m.stop:
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, maxBackoff)
				continue
			}
			backoff = m.opts.Backoff
			if !progressed {
				break
			}
			select {
			case <-m.stop:
				return
			default:
			}
		}
	}
}

// renew keeps the claim on the name while the mirror has nothing to ship
// (every script that writes renews it too). A name another writer claimed
// meanwhile (this one could not reach Redis for the claim's time) is that
// writer's: the copy it needs waits until the name is free again.
func (m *Mirror) renew() error {
	m.mu.Lock()
	needCopy := m.mu.needCopy
	m.mu.Unlock()
	if needCopy || m.gen == 0 {
		return nil // the copy claims the name
	}
	err := claim(m.ctx, m.r, m.keys, m.owner)
	if errors.Is(err, ErrNameTaken) {
		m.needCopyNow(err.Error())
		m.poke()
	}
	return err
}

// step makes a full copy if one is needed, else ships one batch. It
// reports whether there may be more to do.
func (m *Mirror) step() (bool, error) {
	m.mu.Lock()
	needCopy := m.mu.needCopy
	batch := m.mu.queue.first(m.opts.BatchSize)
	m.mu.Unlock()
	if needCopy {
		return true, m.copyAll()
	}
	if len(batch) == 0 {
		return false, nil
	}
	return true, m.ship(batch)
}

// record makes err the mirror's last failure (Stats.LastError), or clears
// it when err is nil.
func (m *Mirror) record(err error) {
	if err != nil && m.ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// Close cut the call short: the mirror's own doing, not a
		// failure, and a caller would take it for its own context's.
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.lastErr = err
	if err != nil {
		m.mu.stats.LastError = err.Error()
	} else {
		m.mu.stats.LastError = ""
	}
}

// copyAll writes a full copy of the filter under a new generation, brings
// it up to date with the changes committed while it was written, and makes
// it live. The filter is never stopped for longer than a piece of its
// counters takes to copy (engine.Filter.CopyCounters, CopySpans), and the
// copy holds no more of them in memory than one chunk. While it is written
// the mirror records the blocks changes touch rather than queueing the
// changes, so a copy that takes long, under many changes, needs no more
// than a bit for each block of the filter.
func (m *Mirror) copyAll() error {
	ctx := m.ctx
	m.mu.Lock()
	reason := m.mu.copyReason
	gaveUp := m.mu.gaveUp
	m.mu.gaveUp = nil
	// Blocks have been marked since the queue gave up on changes after
	// the copy Redis holds, the mirror's: the copy can start from it.
	fromLive := m.mu.tracking != nil && m.gen != 0
	if !fromLive {
		m.mu.tracking = &dirty{}
	}
	m.mu.finishing = false
	m.mu.queue.abandon() // the copy holds these changes
	m.mu.stats.QueueDepth = 0
	m.mu.stats.Copying = true
	m.mu.Unlock()
	madeLive := false
	defer func() {
		if !madeLive { // a copy made live stopped tracking as it was
			m.stopTracking()
		}
	}()
	var old copyMeta
	var gen uint64
	var err error
	var subs []engine.SubFilterStats // the sub-filters the copy started with
	if fromLive {
		old, gen, err = m.copyLive(ctx, gaveUp)
		switch {
		case errors.Is(err, errNoClone):
			fromLive = false // Redis lost it, or cannot clone it: copy in full
			reason += fmt.Sprintf("; in full, as %v", err)
			m.mu.Lock()
			m.mu.tracking = &dirty{}
			m.mu.Unlock()
		case err != nil:
			return err
		default:
			subs = old.subs
			reason += "; from the copy Redis held, with the blocks changed since"
		}
	}
	if !fromLive {
		base := m.outline()
		src := liveSource(m.f, base)
		m.mu.Lock()
		m.mu.stats.CopyBytes, m.mu.stats.CopiedBytes = base.CounterBytes, 0
		m.mu.Unlock()
		src.wrote = func(n uint64) {
			m.mu.Lock()
			m.mu.stats.CopiedBytes += n
			m.mu.Unlock()
		}
		old, gen, err = writeCopy(ctx, m.r, m.keys, m.owner, src, m.opts, m.retry())
		if errors.Is(err, engine.ErrNoSubFilter) {
			return nil // a sub-filter was retired under the copy: copy again
		}
		if err != nil {
			return err
		}
		m.gen, m.seq, m.subs = gen, base.MemSeq, base.SubFilters
		subs = base.SubFilters
	}
	for {
		if err = m.catchUp(ctx); err != nil {
			break
		}
		if !m.queueGaveUp() {
			again := m.retry()
			again.until = m.queueGaveUp
			err = again.do(ctx, func() error { return switchCopy(ctx, m.r, m.keys, m.owner, old, m.gen, m.seq, m.opts.MaxHold) })
			if err == nil || !m.queueGaveUp() {
				break
			}
			if live, err := readMeta(ctx, m.r, m.keys); err == nil && live.gen == m.gen {
				break // switched, its answer lost: a copy follows, as after any overflow
			}
		}
		// The queue gave up on changes after the copy's sequence while
		// Redis was slow to take its last writes or its switch: the copy,
		// still pending, catches up again from the blocks they touched.
		m.mu.Lock()
		m.mu.finishing = false
		m.mu.queue.abandon()
		m.mu.Unlock()
	}
	if errors.Is(err, errReplaced) {
		// Its parts are the sub-filters' it started with and those opened
		// since.
		return errors.Join(err, discardCopy(ctx, m.r, m.keys, gen, m.opts.PartBytes, slices.Concat(subs, m.subs)))
	}
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// With the sequences below, for Flush and Stats; the blocks changes
	// mark from now on are a later copy's (see enqueue).
	m.stopTrackingLocked()
	madeLive = true
	m.mu.needCopy = m.mu.abandoned > m.seq
	m.mu.stats.QueueDepth = m.mu.queue.len()
	m.mu.stats.Recopies++
	m.mu.stats.RecopyReason = reason
	m.mu.stats.Shipped, m.mu.stats.Acked = m.seq, m.seq
	m.mu.acked.Broadcast()
	return nil
}

// copyLive starts a copy from the one Redis holds live, the mirror's own,
// cloned part by part inside Redis (COPY): only the blocks changed since
// are then written, by the catch-up. gaveUp are the changes the queue gave
// up on, after that copy's sequence; their blocks join those marked since.
// It returns the live copy and the new one's generation, or errNoClone if
// Redis no longer holds the mirror's copy, or has no COPY.
func (m *Mirror) copyLive(ctx context.Context, gaveUp [][]change) (copyMeta, uint64, error) {
	marked := &dirty{}
	for _, changes := range gaveUp {
		for _, c := range changes {
			marked.markWrites(c.counters)
		}
	}
	m.mu.Lock()
	m.mu.tracking.merge(marked)
	m.mu.Unlock()
	var live copyMeta
	err := m.retry().do(ctx, func() (err error) {
		live, err = readMeta(ctx, m.r, m.keys)
		if errors.Is(err, ErrNotMirrored) || errors.Is(err, ErrBadAnswer) {
			return fmt.Errorf("%w: Redis no longer holds it: %w", errNoClone, err)
		}
		return err
	})
	if err != nil {
		return copyMeta{}, 0, err
	}
	if live.gen != m.gen || live.seq < m.seq || live.part != m.opts.PartBytes {
		return copyMeta{}, 0, fmt.Errorf("%w: Redis holds generation %d at %d", errNoClone, live.gen, live.seq)
	}
	var gen uint64
	err = m.retry().do(ctx, func() (err error) {
		gen, err = startCopy(ctx, m.r, m.keys, m.owner, copyFields(live.seq, live.part, m.f.Config(), live.subs))
		if errors.Is(err, ErrBadAnswer) {
			return fmt.Errorf("%w: %w", errNoClone, err)
		}
		return err
	})
	if err != nil {
		return copyMeta{}, 0, err
	}
	for _, sub := range live.subs {
		for p := range parts(sub.Blocks*64, live.part) {
			keys := []string{m.keys.meta(), m.keys.pending(), m.keys.part(live.gen, sub.Level, p), m.keys.part(gen, sub.Level, p), m.keys.owner()}
			err := m.retry().do(ctx, func() error {
				_, err := m.r.Eval(ctx, cloneScript, false, keys, append([]any{live.gen, gen}, m.owner.args()...)...)
				switch code := scriptError(err); {
				case claimedByAnother(err):
					return fmt.Errorf("mirror: cloning the copy Redis holds: %w", takenError(err))
				case code == "TBGEN", code == "TBNOCOPY":
					return fmt.Errorf("%w: Redis no longer holds it: %s", errNoClone, code)
				case strings.HasPrefix(code, "TBCOPY"):
					return fmt.Errorf("%w: Redis has no COPY, which came in 6.2: %s", errNoClone, strings.TrimPrefix(code, "TBCOPY "))
				case err != nil:
					return fmt.Errorf("mirror: cloning the copy Redis holds: %w", pendingError(err))
				}
				return nil
			})
			if errors.Is(err, errReplaced) {
				err = errors.Join(err, discardCopy(ctx, m.r, m.keys, gen, live.part, live.subs))
			}
			if err != nil {
				return copyMeta{}, 0, err // a full copy deletes a clone left pending
			}
		}
	}
	m.gen, m.seq, m.subs = gen, live.seq, live.subs
	return live, gen, nil
}

// errNoClone is a copy that was to start from the one Redis holds live
// and found it gone, another's, or not to be cloned: a full copy follows.
var errNoClone = errors.New("mirror: the copy Redis holds cannot be cloned")

// retry is how a full copy makes failed calls again: until Redis answers
// or the mirror closes, each failure shown in Stats.
func (m *Mirror) retry() retry { return retry{backoff: m.opts.Backoff, report: m.record} }

// queueGaveUp reports whether the queue gave up on a change after the
// sequence the mirror holds.
func (m *Mirror) queueGaveUp() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.abandoned > m.seq
}

// stopTracking ends the record of changed blocks a full copy keeps, as
// the copy ends.
func (m *Mirror) stopTracking() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopTrackingLocked()
}

func (m *Mirror) stopTrackingLocked() {
	m.mu.tracking, m.mu.finishing = nil, false
	m.mu.stats.Copying, m.mu.stats.CopyBytes, m.mu.stats.CopiedBytes = false, 0, 0
}

// holdBytes is the most a copy's catch-up reads under one hold of the
// filter's lock (engine.Filter.CopySpans) by default: changes wait at most
// for that. holdSpans bounds the spans a read and its write to Redis take.
const (
	holdBytes = 1 << 20
	holdSpans = 4096
)

// catchUp brings a copy just written, not yet live, up to date with the
// changes made while it was written, and leaves it at m.seq, with every
// change after m.seq queued (and its blocks marked, until the switch). It
// reads the blocks those changes touched again, in rounds, each round
// writing those the changes before it touched, until few are left: the
// last round reads those under one hold of the filter's lock, exact at
// its sequence. A round keeps up if the mirror writes blocks faster than
// the filter changes new ones.
func (m *Mirror) catchUp(ctx context.Context) error {
	buf := make([]byte, m.opts.holdBytes)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// The copy takes the chain's sub-filters as they are now, so
		// that the blocks of one opened since are written into it.
		if err := m.reshapePending(ctx, m.f.Stats().SubFilters); err != nil {
			return err
		}
		m.mu.Lock()
		last := uint64(m.mu.tracking.blocks) <= m.opts.holdBytes/blockBytes
		spans, from := m.mu.tracking.take(), m.mu.lastSeq
		if last {
			m.mu.finishing = true
			m.mu.queue.abandon() // those of an earlier last round
		}
		m.mu.Unlock()
		if !last {
			if err := m.rewrite(ctx, spans, buf); err != nil {
				return err
			}
			continue
		}
		if m.lastRound != nil {
			m.lastRound()
		}
		if done, err := m.finish(ctx, spans, from, buf); done || err != nil {
			return err
		}
	}
}

// rewrite reads spans again, a piece at a time, and writes them into the
// pending copy. A span of a level whose sub-filter is not the one the copy
// holds (a level retired and opened again since the copy took the chain's
// sub-filters) is marked again for a later round.
func (m *Mirror) rewrite(ctx context.Context, spans []engine.Span, buf []byte) error {
	for len(spans) > 0 {
		var group []engine.Span
		group, spans = cut(spans, m.opts.holdBytes, holdSpans)
		st, err := m.f.CopySpans(group, buf)
		if err != nil {
			return err
		}
		writes, stale := m.heldWrites(group, buf, st.SubFilters)
		if len(stale) > 0 {
			m.mu.Lock()
			for _, s := range stale {
				m.mu.tracking.mark(s.Level, s.Offset, s.Bytes)
			}
			m.mu.Unlock()
		}
		if len(writes) == 0 {
			continue
		}
		if err := m.patch(ctx, []change{{counters: writes}}); err != nil {
			return err
		}
	}
	return nil
}

// heldWrites pairs spans with their bytes in buf: those of levels whose
// sub-filter in held is the one the pending copy holds, and those of
// levels held by another (stale); levels not held are left out.
func (m *Mirror) heldWrites(spans []engine.Span, buf []byte, held []engine.SubFilterStats) (writes []engine.CounterWrite, stale []engine.Span) {
	for _, s := range spans {
		bytes := buf[:s.Bytes]
		buf = buf[s.Bytes:]
		now, ok := subAt(held, s.Level)
		if !ok {
			continue
		}
		if copied, ok := subAt(m.subs, s.Level); ok && sameSubFilter(copied, now) {
			writes = append(writes, engine.CounterWrite{Level: s.Level, Offset: s.Offset, Bytes: bytes})
		} else {
			stale = append(stale, s)
		}
	}
	return writes, stale
}

// finish is a copy's last round: it reads spans, the blocks changed since
// the sequence from, under one hold of the filter's lock, and writes them
// with the changes queued between from and the moment of that read. It
// reports false, to go round again, if the chain's sub-filters changed, or
// the queue gave up on a change, in between.
func (m *Mirror) finish(ctx context.Context, spans []engine.Span, from uint64, buf []byte) (bool, error) {
	st, err := m.f.CopySpans(spans, buf)
	if err != nil {
		return false, err
	}
	m.mu.Lock()
	var queued []change
	m.mu.queue.each(func(waiting []change) bool {
		for _, c := range waiting {
			if c.seq > st.MemSeq {
				return false
			}
			queued = append(queued, change{counters: c.counters})
		}
		return true
	})
	// The queue holds every change after from, in order, unless it gave up
	// on some; none of those up to the read changed the chain's sub-filters
	// if the read found those the copy has.
	ok := sameSubFilters(st.SubFilters, m.subs) && from+uint64(len(queued)) == st.MemSeq
	if ok {
		// Changes go on being tracked, and queued, until the switch.
		m.mu.queue.drop(len(queued))
	} else {
		for _, s := range spans {
			m.mu.tracking.mark(s.Level, s.Offset, s.Bytes)
		}
		m.mu.finishing = false
	}
	m.mu.Unlock()
	if !ok {
		return false, nil
	}
	// The queued changes' bytes first, then the blocks as they were at
	// st.MemSeq: later writes of a span win.
	writes, _ := m.heldWrites(spans, buf, st.SubFilters)
	batch := append([]change{{dir: st.SubFilters}}, queued...)
	batch = append(batch, change{counters: writes})
	for _, sub := range st.SubFilters {
		batch = append(batch, change{tallies: engine.Tallies{Level: sub.Level, Count: sub.Count, MaxID: sub.MaxID, NonZero: sub.NonZero}, hasTallies: true})
	}
	keys, args := m.opArgs(m.keys.pending(), m.shipHead(st.MemSeq), batch)
	keys = append(keys, m.keys.pending()) // no reader holds a pending copy (heldLua)
	if err := m.retry().do(ctx, func() error {
		_, err := m.r.Eval(ctx, shipScript, false, keys, args...)
		return catchUpError(err)
	}); err != nil {
		return false, err
	}
	if err := m.fill(ctx, m.keys.pending()); err != nil {
		return false, catchUpError(err)
	}
	m.seq, m.subs = st.MemSeq, st.SubFilters
	return true, nil
}

// reshapePending gives the pending copy the sub-filters subs, new ones
// zeroed, retired ones deleted, unless it has them.
func (m *Mirror) reshapePending(ctx context.Context, subs []engine.SubFilterStats) error {
	if sameSubFilters(subs, m.subs) {
		return nil
	}
	if err := m.patch(ctx, []change{{dir: subs}}); err != nil {
		return err
	}
	m.subs = subs
	return nil
}

// patch applies batch to the pending copy, at no sequence (patchScript).
func (m *Mirror) patch(ctx context.Context, batch []change) error {
	keys, args := m.opArgs(m.keys.pending(), append([]any{m.gen}, m.owner.args()...), batch)
	if err := m.retry().do(ctx, func() error {
		_, err := m.r.Eval(ctx, patchScript, false, keys, args...)
		return catchUpError(err)
	}); err != nil {
		return err
	}
	return catchUpError(m.fill(ctx, m.keys.pending()))
}

// fill grows the parts the last batch applied to the copy of hash made
// (see applyOps) to their lengths, one call a part, so that Redis is held
// for one part's zeroing at a time. A call that fails is made again, as a
// copy's are, until Redis answers or the mirror closes.
func (m *Mirror) fill(ctx context.Context, hash string) error {
	for _, p := range m.scratch.made {
		err := m.retry().do(ctx, func() error {
			_, err := m.r.Eval(ctx, fillScript, false, []string{hash, p.key, m.keys.owner()}, append([]any{m.gen, p.length}, m.owner.args()...)...)
			return err
		})
		if err != nil {
			return fmt.Errorf("mirror: filling %s: %w", p.key, err)
		}
	}
	return nil
}

// catchUpError is err, from a call that brings a copy up to date, said so.
func catchUpError(err error) error {
	if err != nil {
		return fmt.Errorf("mirror: bringing a copy up to date: %w", pendingError(err))
	}
	return nil
}

// pendingError is err, a script's answer on the pending copy, as
// errReplaced if that copy is another's.
func pendingError(err error) error {
	if claimedByAnother(err) {
		return takenError(err)
	}
	if code := scriptError(err); code != "" {
		return fmt.Errorf("%w (%s)", errReplaced, code)
	}
	return err
}

// subAt is the sub-filter of subs at level.
func subAt(subs []engine.SubFilterStats, level int) (engine.SubFilterStats, bool) {
	for _, s := range subs {
		if s.Level == level {
			return s, true
		}
	}
	return engine.SubFilterStats{}, false
}

// sameSubFilter reports whether a and b are the same sub-filter: a level
// a retirement freed goes to a new one, with another first id.
func sameSubFilter(a, b engine.SubFilterStats) bool {
	return a.Level == b.Level && a.FirstID == b.FirstID && a.Blocks == b.Blocks
}

// sameSubFilters reports whether a and b hold the same sub-filters, in
// the same order.
func sameSubFilters(a, b []engine.SubFilterStats) bool {
	return slices.EqualFunc(a, b, sameSubFilter)
}

// copySource is what a full copy is written from: a filter's parameters,
// the sequence the copy starts at, its sub-filters with their tallies at
// that sequence, and their counters, read a span at a time.
type copySource struct {
	config engine.Config
	seq    uint64
	subs   []engine.SubFilterStats
	read   func(i int, offset uint64, dst []byte) error
	// wrote, if not nil, is told of each chunk written, with its size.
	wrote func(n uint64)
}

// snapshotSource copies from a snapshot, exact at its sequence. A read
// that runs past the sub-filter's end is refused, as the filter's own
// CopyCounters refuses it, rather than filled short.
func snapshotSource(snap *engine.Snapshot) copySource {
	return copySource{config: snap.Config(), seq: snap.MemSeq(), subs: snap.SubFilters(),
		read: func(i int, offset uint64, dst []byte) error {
			counters := snap.Counters(i)
			if offset > uint64(len(counters)) || uint64(len(dst)) > uint64(len(counters))-offset {
				return fmt.Errorf("%w: %d bytes at %d of a snapshot's sub-filter %d, which has %d",
					engine.ErrInvalidInput, len(dst), offset, i, len(counters))
			}
			copy(dst, counters[offset:])
			return nil
		}}
}

// liveSource copies from the filter itself while it changes, starting at
// base, a Stats taken between two changes: what it reads holds every change
// up to base.MemSeq and perhaps later ones, which the caller replays.
func liveSource(f *engine.Filter, base engine.Stats) copySource {
	return copySource{config: base.Config, seq: base.MemSeq, subs: base.SubFilters,
		read: func(i int, offset uint64, dst []byte) error {
			return f.CopyCounters(base.SubFilters[i].Level, offset, dst)
		}}
}

// writeCopy writes src under a generation of its own (see startScript) and
// leaves it pending, not yet live, making failed writes again as again
// says. It returns what the live copy was, and the new generation. If
// another copy replaced it, or Redis lost it, meanwhile, it deletes what it
// wrote and returns errReplaced.
func writeCopy(ctx context.Context, r Redis, k keys, who owner, src copySource, opts Options, again retry) (copyMeta, uint64, error) {
	partBytes := opts.PartBytes
	old, err := readMeta(ctx, r, k)
	if err != nil && !errors.Is(err, ErrNotMirrored) {
		return copyMeta{}, 0, err // a foreign value under the name is refused, not overwritten
	}
	gen, err := startCopy(ctx, r, k, who, copyFields(src.seq, partBytes, src.config, src.subs))
	if err != nil {
		return copyMeta{}, 0, err
	}
	buf := make([]byte, min(chunkBytes, partBytes, largest(src.subs)))
	for i, sub := range src.subs {
		size := sub.Blocks * 64
		for p := range parts(size, partBytes) {
			key := k.part(gen, sub.Level, p)
			partSize := min(partBytes, size-p*partBytes)
			for off := uint64(0); off < partSize; off += chunkBytes {
				piece := buf[:min(uint64(len(buf)), partSize-off)]
				if err := src.read(i, p*partBytes+off, piece); err != nil {
					return copyMeta{}, 0, err
				}
				if err := writePart(ctx, r, k, who, gen, key, off, piece, again); err != nil {
					if errors.Is(err, errReplaced) {
						err = errors.Join(err, discardCopy(ctx, r, k, gen, partBytes, src.subs))
					}
					return copyMeta{}, 0, err
				}
				if src.wrote != nil {
					src.wrote(uint64(len(piece)))
				}
			}
		}
	}
	return old, gen, nil
}

// retry says how a full copy makes a failed call again. Its writes, its
// catch-up and its switch are safe to repeat, and a copy of many gigabytes
// should not start over for a lost answer or a Redis away for a while.
type retry struct {
	backoff  time.Duration // the first pause; it doubles up to maxBackoff
	attempts int           // calls made again before giving up; 0: until ctx ends
	report   func(error)   // told of every failure, if not nil
	until    func() bool   // if not nil, asked after every failure: true ends the tries
}

// startCopy deletes a copy left pending, then starts a new one with the
// pending hash's fields, naming what the copy writes before it writes it,
// so that a copy that never becomes live is deleted by the next one. It
// returns the new copy's generation (see startScript).
func startCopy(ctx context.Context, r Redis, k keys, who owner, fields []any) (uint64, error) {
	// Claimed first: a copy left pending may be another writer's, still
	// being written.
	if err := claim(ctx, r, k, who); err != nil {
		return 0, err
	}
	if err := discardPending(ctx, r, k); err != nil {
		return 0, err
	}
	answer, err := r.Eval(ctx, startScript, false, []string{k.pending(), k.gens(), k.meta(), k.owner()}, append(who.args(), fields...)...)
	if err != nil {
		return 0, fmt.Errorf("mirror: starting a copy: %w", takenError(err))
	}
	gen, ok := answer.(int64)
	if !ok || gen <= 0 {
		return 0, fmt.Errorf("%w: a new copy's generation is %v", ErrBadAnswer, answer)
	}
	return uint64(gen), nil
}

// callRetries is how many times Push makes a failed call again. A mirror's
// copy tries until Redis answers or the mirror closes, while it marks the
// blocks changes touch, in a 512th of the filter at most.
const callRetries = 3

// maxBackoff is the longest pause between two tries.
const maxBackoff = 5 * time.Second

// do runs call, and again after a failure that another try may mend.
func (p retry) do(ctx context.Context, call func() error) error {
	for attempt := 0; ; attempt++ {
		err := call()
		if err == nil || attempt == p.attempts && p.attempts > 0 || !transient(err) {
			return err
		}
		if p.report != nil {
			p.report(err)
		}
		if p.until != nil && p.until() {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(min(p.backoff<<min(attempt, 16), maxBackoff)):
		}
	}
}

// transient reports whether err is a failed call that may succeed if made
// again: not an error a script raised, nor a copy found not to be the one
// written to.
func transient(err error) bool {
	return scriptError(err) == "" && !errors.Is(err, errReplaced) && !errors.Is(err, errNotLive) &&
		!errors.Is(err, errNoClone) && !errors.Is(err, ErrNameTaken) && !errors.Is(err, context.Canceled)
}

// writePart writes piece at offset off of a part of the pending copy of
// generation gen, trying again after a failed call. It returns errReplaced
// if the pending copy is another's, or Redis lost it.
func writePart(ctx context.Context, r Redis, k keys, who owner, gen uint64, key string, off uint64, piece []byte, again retry) error {
	return again.do(ctx, func() error {
		_, err := r.Eval(ctx, writeScript, false, []string{key, k.pending(), k.owner()}, append([]any{gen, off, piece}, who.args()...)...)
		if err != nil {
			return fmt.Errorf("mirror: writing a copy: %w", pendingError(err))
		}
		return nil
	})
}

// heldFor reads a HELD answer of shipScript or switchScript (see heldLua):
// how long the writer waits before it tries again, and whether the answer
// was one. It waits for the hold's time to live, and a tenth of a second
// at most: a reader that ends its hold early deletes it.
func heldFor(answer any) (time.Duration, bool) {
	s, ok := answer.(string)
	if !ok {
		return 0, false
	}
	ttl, ok := strings.CutPrefix(s, "HELD ")
	if !ok {
		return 0, false
	}
	ms, err := strconv.ParseInt(ttl, 10, 64)
	if err != nil || ms <= 0 || ms > maxHeldWait.Milliseconds() {
		return maxHeldWait, true
	}
	return time.Duration(ms) * time.Millisecond, true
}

// maxHeldWait is the longest a writer waits before it asks again whether a
// reader still holds its copy.
const maxHeldWait = 100 * time.Millisecond

// largest is the size of the largest sub-filter's counters.
func largest(subs []engine.SubFilterStats) uint64 {
	size := uint64(0)
	for _, sub := range subs {
		size = max(size, sub.Blocks*64)
	}
	return size
}

// switchCopy makes the pending copy of generation gen, at sequence seq,
// live, and deletes old. It waits for a reader's hold on the live copy,
// for maxHold at most.
func switchCopy(ctx context.Context, r Redis, k keys, who owner, old copyMeta, gen, seq uint64, maxHold time.Duration) error {
	keys := append(append([]string{k.meta(), k.pending(), k.owner()}, k.copyParts(old)...), k.hold())
	args := append(append([]any{gen, seq}, who.args()...), maxHold.Milliseconds())
	var err error
	for {
		var answer any
		answer, err = r.Eval(ctx, switchScript, false, keys, args...)
		if err == nil && answer == "CUT" {
			continue // a reader's hold, cut: the switch goes again at once
		}
		wait, held := heldFor(answer)
		if err != nil || !held {
			break
		}
		// A reader holds the live copy (see keys.hold): the switch waits
		// for it, as the changes after the copy's sequence wait, queued.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	switch {
	case claimedByAnother(err):
		return fmt.Errorf("mirror: switching to the new copy: %w", takenError(err))
	case scriptError(err) == "TBPENDING":
		// A switch made again after its answer was lost finds its pending
		// hash already renamed.
		if live, err := readMeta(ctx, r, k); err == nil && live.gen == gen && live.seq == seq {
			return nil
		}
		return fmt.Errorf("%w: at its switch", errReplaced)
	case err != nil:
		return fmt.Errorf("mirror: switching to the new copy: %w", err)
	}
	return nil
}

// errNotLive is a batch shipped to a copy that is not the one Redis holds
// live (Redis lost it, or holds another): a full copy follows.
var errNotLive = errors.New("mirror: Redis's copy is not the one shipped to")

// errReplaced is a copy another process's copy of the same name replaced
// before its switch: that copy's start deleted this one's pending hash. The
// two never share parts (see startScript), so neither is corrupted; the one
// replaced deletes what it wrote (discardCopy) and starts again.
var errReplaced = errors.New("mirror: another copy of the same name replaced this one before its switch")

// discardCopy deletes the parts of the copy of generation gen of subs, a
// copy another replaced before its switch, leaving the pending hash, the
// other copy's, alone.
func discardCopy(ctx context.Context, r Redis, k keys, gen, partBytes uint64, subs []engine.SubFilterStats) error {
	return discardParts(ctx, r, k, gen, k.copyParts(copyMeta{gen: gen, part: partBytes, subs: subs}), false)
}

// discardPending deletes a copy that was being written and never became
// live (its writer stopped, or Redis failed, before the switch): the parts
// its pending hash names, a few at a time, then the hash. A pending hash
// that does not parse, or names more than maxPendingParts, is deleted
// alone.
func discardPending(ctx context.Context, r Redis, k keys) error {
	answer, err := r.Eval(ctx, metaScript, false, []string{k.pending()})
	if err != nil {
		if strings.Contains(err.Error(), "WRONGTYPE") {
			return fmt.Errorf("%w: %s is not a tallybloom mirror's: %v", ErrBadAnswer, k.pending(), err)
		}
		return fmt.Errorf("mirror: reading %s: %w", k.pending(), err)
	}
	pending, err := decodeMeta(answer)
	if errors.Is(err, ErrNotMirrored) {
		return nil
	}
	var names []string
	if _, ok := partCount(pending, maxPendingParts); ok && err == nil {
		names = k.copyParts(pending)
	}
	return discardParts(ctx, r, k, pending.gen, names, true)
}

// discardParts deletes names, parts of the copy of generation gen, unless
// that copy is live, a few at a time; with the last of them the pending
// hash, if withPending.
func discardParts(ctx context.Context, r Redis, k keys, gen uint64, names []string, withPending bool) error {
	const batch = 1024
	for {
		n := min(batch, len(names))
		last := 0
		if n == len(names) && withPending {
			last = 1 // the hash goes with the last parts, so none is forgotten
		}
		if _, err := r.Eval(ctx, discardScript, false, append([]string{k.meta(), k.pending()}, names[:n]...), gen, last); err != nil {
			return fmt.Errorf("mirror: deleting a copy that never became live: %w", err)
		}
		if names = names[n:]; len(names) == 0 {
			return nil
		}
	}
}

// fillLive fills the parts the batch just shipped made in the live copy.
// Should Redis hold another copy by then, a full copy follows.
func (m *Mirror) fillLive() error {
	err := m.fill(m.ctx, m.keys.meta())
	switch code := scriptError(err); {
	case claimedByAnother(err):
		err = takenError(err)
		m.needCopyNow(err.Error())
	case code != "":
		m.needCopyNow(fmt.Sprintf("Redis's copy is not the one shipped to (%s)", code))
	}
	return err
}

// ship applies a batch of queued changes in one script.
func (m *Mirror) ship(batch []change) error {
	if batch[0].seq != m.seq+1 {
		m.needCopyNow(fmt.Sprintf("the queue starts at change %d, Redis holds %d", batch[0].seq, m.seq))
		return nil
	}
	keys, args := m.shipArgs(batch)
	answer, err := m.r.Eval(m.ctx, shipScript, false, keys, args...)
	code := scriptError(err)
	var applied uint64
	wait, held := heldFor(answer)
	held = held && err == nil
	cut := err == nil && answer == "CUT"
	m.mu.Lock()
	m.mu.stats.Held = held
	if cut {
		m.mu.stats.HoldsCut++
	}
	m.mu.Unlock()
	if held {
		// A reader holds the copy (see keys.hold): the batch waits,
		// queued, and the changes after it queue behind it.
		m.waitOutHold(wait)
		return nil
	}
	if cut {
		return nil // the batch goes again at once (step)
	}
	switch {
	case err == nil:
		// Filled before the batch counts as held, so that a Flush
		// returns with the copy whole. (Filling fails only when Redis
		// holds another copy by then, or the mirror closes.)
		if err := m.fillLive(); err != nil {
			return err
		}
		m.acknowledge(batch, batch[len(batch)-1].seq, answer == "DUP")
		return nil
	case code == "":
		return fmt.Errorf("mirror: shipping changes %d..%d: %w", m.seq+1, batch[len(batch)-1].seq, err)
	case sequenceIn(code, &applied) && applied > m.seq && applied <= batch[len(batch)-1].seq:
		// An earlier, shorter batch was applied but its answer lost: the
		// changes up to Redis's sequence are in; ship the rest. (Parts
		// the rest makes are not there yet: fill passes them by, and the
		// rest's batch fills them.)
		if err := m.fillLive(); err != nil {
			return err
		}
		m.acknowledge(batch, applied, true)
		return nil
	}
	if claimedByAnother(err) {
		// Another writer claimed the name while this one could not renew
		// its claim; it writes its own copy, and this one waits.
		err = takenError(err)
		m.needCopyNow(err.Error())
		return err
	}
	if part, ok := strings.CutPrefix(code, "TBPART "); ok {
		err = partLost(part)
		m.needCopyNow(err.Error())
		return err
	}
	// Redis lost the copy, holds another, or is elsewhere.
	m.needCopyNow(fmt.Sprintf("Redis's copy is not the one shipped to (%s)", code))
	return fmt.Errorf("%w (%s); copying in full", errNotLive, code)
}

// waitOutHold waits, after a batch found a reader holding the copy, until
// the hold is gone or cut (or Redis does not say), or the mirror closes:
// it asks with holdTTLScript, a call that carries nothing, where sending
// the batch again each time would carry all of it.
func (m *Mirror) waitOutHold(wait time.Duration) {
	for held := true; held; {
		select {
		case <-m.stop:
			return
		case <-time.After(wait):
		}
		answer, err := m.r.Eval(m.ctx, holdTTLScript, false, []string{m.keys.meta(), m.keys.hold()}, m.opts.MaxHold.Milliseconds())
		wait, held = heldFor(answer)
		held = held && err == nil
		if answer == "CUT" {
			m.mu.Lock()
			m.mu.stats.HoldsCut++
			m.mu.Unlock()
		}
	}
}

// shipArgs builds shipScript's keys and arguments for batch.
func (m *Mirror) shipArgs(batch []change) (keys []string, args []any) {
	keys, args = m.opArgs(m.keys.meta(), m.shipHead(batch[len(batch)-1].seq), batch)
	return append(keys, m.keys.hold()), args
}

// shipHead is shipScript's arguments before the operations, for a batch
// that takes the copy from m.seq to seq.
func (m *Mirror) shipHead(seq uint64) []any {
	return append(append([]any{m.seq, seq, m.gen}, m.owner.args()...), m.opts.MaxHold.Milliseconds())
}

// opArgs builds the keys and arguments of a script that applies batch to
// the copy of hash, its arguments head then the operations (see
// applyOps), from the directory m.subs. The script applies a batch whole,
// so only the last content of a span, and the last tallies of a
// sub-filter, need to reach Redis: an earlier write the batch writes again
// is left out. A change of directory ends that, as the parts and tallies
// it creates or deletes come between. The later bytes take the earlier
// write's place, which is right as no write overlapping it comes between:
// a change writes one block, or words of a flat sub-filter, and a copy's
// last round puts its runs of blocks after every other write.
func (m *Mirror) opArgs(hash string, head []any, batch []change) (keys []string, args []any) {
	keys = []string{hash, m.keys.owner()}
	index, spans, tallies := m.scratch.take()
	// uses[i] is how the batch so far uses the part of key index i+1 (the
	// first two keys are not parts).
	uses := append(m.scratch.uses[:0], partNamed, partNamed)
	defer func() { m.scratch.uses = uses }()
	key := func(level int, part uint64) int {
		at := partOf{level, part}
		if i, ok := index[at]; ok {
			return i
		}
		keys = append(keys, m.keys.part(m.gen, level, part))
		uses = append(uses, partNamed)
		index[at] = len(keys)
		return len(keys)
	}
	made := func(level int, part uint64) int {
		i := key(level, part)
		if uses[i-1] == partNamed {
			uses[i-1] = partMade
		}
		return i
	}
	written := func(level int, part uint64) int {
		i := key(level, part)
		if uses[i-1] == partNamed {
			uses[i-1] = partChecked
		}
		return i
	}
	writes := 0
	for i := range batch {
		writes += len(batch[i].counters)
	}
	args = append(make([]any, 0, len(head)+4*writes+3*len(batch)), head...)
	subs := m.subs
	// run is where in args the count of the last write operation goes,
	// count that count, part the part it writes and end where it ends: a write
	// into the same part right after it joins it. The count is put in
	// args when the operation is whole, so that it is boxed once.
	run, count, part, end := -1, 0, 0, 0
	closeRun := func() {
		if run >= 0 {
			args[run] = count
		}
	}
	for i := range batch {
		c := &batch[i]
		if c.dir != nil {
			encodeTalliesAt(args, tallies)
			clear(spans)
			clear(tallies)
			args = m.reshape(args, made, key, subs, c.dir)
			subs = c.dir
		}
		for _, w := range c.counters {
			for off, b := w.Offset, w.Bytes; len(b) > 0; {
				// A write of several blocks may cross into the next part.
				p := off / m.opts.PartBytes
				n := min(uint64(len(b)), (p+1)*m.opts.PartBytes-off)
				span := spanOf{w.Level, off, int(n)}
				if at, ok := spans[span]; ok {
					args[at] = b[:n]
				} else {
					k := written(w.Level, p)
					if run < 0 || part != k || end != len(args) {
						closeRun()
						args = append(args, "c", k, nil)
						run, count, part = len(args)-1, 0, k
					}
					args = append(args, off-p*m.opts.PartBytes, b[:n])
					count++
					spans[span], end = len(args)-1, len(args)
				}
				off, b = off+n, b[n:]
			}
		}
		if t := &c.tallies; c.hasTallies {
			if at, ok := tallies[t.Level]; ok {
				args[at] = t
			} else {
				args = append(args, "t", t.Level, t)
				tallies[t.Level] = len(args) - 1
			}
		}
	}
	closeRun()
	encodeTalliesAt(args, tallies)
	// Then the parts applyOps checks before it writes: those written
	// before the batch made them.
	checks := 0
	for i, use := range uses {
		if use == partChecked {
			args = append(args, i+1)
			checks++
		}
	}
	return keys, append(args, checks)
}

// How a batch uses a part (opArgs).
const (
	partNamed   uint8 = iota // named by an operation that neither makes nor writes it
	partMade                 // made (and perhaps written after)
	partChecked              // written before it was made, or never made: it must exist
)

// opScratch is opArgs's maps, kept from one call to the next, which
// would otherwise spend most of their time growing: only the shipper
// goroutine builds arguments. parts says where in the keys each part is,
// spans where in the arguments each span's bytes are, and tallies where
// each level's tallies are.
type opScratch struct {
	parts   map[partOf]int
	spans   map[spanOf]int
	tallies map[int]int
	// uses are how the batch uses each part it names, by key index.
	uses []uint8
	// made are the parts the last arguments built make, one byte long
	// (see applyOps), for fill.
	made []madePart
}

// madePart is a part a batch makes, and the length fill gives it.
type madePart struct {
	key    string
	length uint64
}

// take returns the maps, empty.
func (s *opScratch) take() (map[partOf]int, map[spanOf]int, map[int]int) {
	if s.parts == nil {
		s.parts, s.spans, s.tallies = map[partOf]int{}, map[spanOf]int{}, map[int]int{}
	}
	clear(s.parts)
	clear(s.spans)
	clear(s.tallies)
	s.made = s.made[:0]
	return s.parts, s.spans, s.tallies
}

// partOf names a part of a sub-filter's counters; spanOf a span of them.
type (
	partOf struct {
		level int
		part  uint64
	}
	spanOf struct {
		level  int
		offset uint64
		length int
	}
)

// encodeTalliesAt encodes the tallies at each place in args that at names.
func encodeTalliesAt(args []any, at map[int]int) {
	for _, i := range at {
		t := args[i].(*engine.Tallies)
		args[i] = encodeTallies(t.Count, t.MaxID, t.NonZero)
	}
}

// sequenceIn reads the sequence of a TBSEQ error.
func sequenceIn(code string, seq *uint64) bool {
	n, err := fmt.Sscanf(code, "TBSEQ %d", seq)
	return n == 1 && err == nil
}

// acknowledge records that Redis holds the changes of batch up to seq.
func (m *Mirror) acknowledge(batch []change, seq uint64, resent bool) {
	n := 0
	for n < len(batch) && batch[n].seq <= seq {
		if batch[n].dir != nil {
			m.subs = batch[n].dir
		}
		n++
	}
	m.seq = seq
	m.mu.Lock()
	defer m.mu.Unlock()
	if resent {
		m.mu.stats.Resends++
	}
	if m.mu.queue.len() >= n && n > 0 && m.mu.queue.first(1)[0].seq == batch[0].seq {
		m.mu.queue.drop(n)
	}
	m.mu.stats.QueueDepth = m.mu.queue.len()
	m.mu.stats.Shipped, m.mu.stats.Acked = m.seq, m.seq
	m.mu.acked.Broadcast()
}

// reshape adds the operations that take the copy from directory old to
// new: retired sub-filters' parts deleted, new ones created zeroed, those
// of a level that went to a new sub-filter zeroed again.
func (m *Mirror) reshape(args []any, made, key func(int, uint64) int, old, new []engine.SubFilterStats) []any {
	had := map[int]engine.SubFilterStats{}
	for _, s := range old {
		had[s.Level] = s
	}
	kept := map[int]bool{}
	for _, s := range new {
		kept[s.Level] = true
		if was, ok := had[s.Level]; ok && sameSubFilter(was, s) {
			continue
		}
		size := s.Blocks * 64
		for p := range parts(size, m.opts.PartBytes) {
			args = append(args, "n", made(s.Level, p))
			m.scratch.made = append(m.scratch.made, madePart{m.keys.part(m.gen, s.Level, p), min(m.opts.PartBytes, size-p*m.opts.PartBytes)})
		}
	}
	for _, s := range old {
		if kept[s.Level] {
			continue
		}
		for p := range parts(s.Blocks*64, m.opts.PartBytes) {
			args = append(args, "x", key(s.Level, p))
		}
		args = append(args, "u", s.Level)
	}
	return append(args, "d", encodeDir(new))
}

func (m *Mirror) needCopyNow(reason string) {
	m.mu.Lock()
	m.mu.needCopy, m.mu.copyReason = true, reason
	m.mu.Unlock()
}

// Flush waits until Redis holds every change committed before the call, or
// ctx ends, or the mirror is closed (ErrClosed). While a reader holds the
// copy (Stats.Held), that is once its read has ended.
func (m *Mirror) Flush(ctx context.Context) error {
	target := m.f.Stats().MemSeq
	stop := context.AfterFunc(ctx, m.wakeWaiters)
	defer stop()
	m.poke()
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.mu.stats.Acked < target {
		// The last failure is wrapped too, so that errors.Is tells, say,
		// a name another writer holds (ErrNameTaken).
		last := m.mu.lastErr
		if last == nil {
			last = errNone
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("mirror: Redis holds sequence %d of %d: %w (last error: %w)", m.mu.stats.Acked, target, err, last)
		}
		if m.mu.closed {
			return fmt.Errorf("%w: Redis holds sequence %d of %d (last error: %w)", ErrClosed, m.mu.stats.Acked, target, last)
		}
		m.mu.acked.Wait()
	}
	return nil
}

// errNone stands in Flush's error for a last failure there was none of.
var errNone = errors.New("none")

// wakeWaiters wakes Flush calls to look again at their context and the
// mirror.
func (m *Mirror) wakeWaiters() {
	m.mu.Lock()
	m.mu.acked.Broadcast()
	m.mu.Unlock()
}

// Stats reports the mirror's progress.
func (m *Mirror) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.mu.stats
	if m.mu.tracking != nil {
		s.ChangedBlocks = m.mu.tracking.blocks
	}
	return s
}

// Close stops the mirror; changes not yet in Redis stay out of it (Flush
// first to wait for them), and a full copy in progress stops where it is,
// never live, for the next copy to delete.
func (m *Mirror) Close() error {
	select {
	case <-m.stop:
		return ErrClosed
	default:
	}
	m.stopFeed()
	close(m.stop)
	m.cancel()
	<-m.done
	// The name is free at once for the next writer, a restart of this one
	// say.
	release(m.r, m.keys, m.owner, m.opts.Timeout)
	m.mu.Lock()
	m.mu.closed = true
	m.mu.Unlock()
	m.wakeWaiters()
	return nil
}

// readMeta reads the live copy's meta hash.
func readMeta(ctx context.Context, r Redis, k keys) (copyMeta, error) {
	answer, err := r.Eval(ctx, metaScript, true, []string{k.meta()})
	if err != nil {
		if strings.Contains(err.Error(), "WRONGTYPE") {
			return copyMeta{}, fmt.Errorf("%w: %s is not a tallybloom mirror: %v", ErrBadAnswer, k.meta(), err)
		}
		return copyMeta{}, fmt.Errorf("mirror: reading %s: %w", k.meta(), err)
	}
	return decodeMeta(answer)
}
