package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/tallybloom/tallybloom/engine"
)

// Pull reads the copy of the filter name from Redis into memory: the same
// parameters, directory, tallies and counter bytes, all at the copy's one
// sequence. A change shipped during the read starts it again, after a
// pause that doubles each time; from the third read of a copy larger than
// one call reads, Pull holds the copy, and its writer queues its changes
// until Pull has read it (see the package's Reading). After about 1.3 s of
// reads sent back it returns ErrCopyChanging.
func Pull(ctx context.Context, r Redis, name string) (*engine.Snapshot, error) {
	k, err := target(r, name)
	if err != nil {
		return nil, err
	}
	return readWhole(ctx, r, k, func(rd *reader) (*engine.Snapshot, error) { return rd.pull(ctx) })
}

// wholeAttempts and wholePause bound the reads of a whole copy (Pull,
// Restore) that the copy's changes send back to the start: the pause after
// the nth is wholePause<<(n-1), at most 100 ms, about 1.3 s in all, as
// engine.Filter.Snapshot waits in a reader for its writer to pause.
const (
	wholeAttempts = 20
	wholePause    = time.Millisecond
)

// Holding a copy (see keys.hold): the reads of a whole copy sent back by
// its writer's changes before the reader asks the writer to pause, and how
// long the pause lasts unless the reader renews it, which it does at each
// call once a quarter of that has passed.
const (
	holdAfter = 2
	holdFor   = 5 * time.Second
)

// reader reads a whole copy of k's filter from r, holding it (see
// keys.hold) from the read after holdAfter on.
type reader struct {
	r       Redis
	k       keys
	token   string
	ttl     time.Duration // how long a hold lasts unless renewed (holdFor)
	wants   bool          // hold the copy on this read, if it is larger than one call
	held    uint64        // the generation held, or 0
	since   time.Time     // when the hold was taken
	renewed time.Time     // when the hold was last set
	// cutFound: the writer had cut another reader's hold, and this one
	// reads without one.
	cutFound bool
}

// readWhole runs once, a read of the whole copy, again while the copy
// changes under it or a part is not yet filled, at most wholeAttempts
// times, and ends the hold a read took.
func readWhole[T any](ctx context.Context, r Redis, k keys, once func(*reader) (T, error)) (T, error) {
	rd := &reader{r: r, k: k, token: newOwner(holdFor).token, ttl: holdFor}
	defer rd.unhold()
	for attempt := 1; ; attempt++ {
		rd.wants = attempt > holdAfter
		got, err := once(rd)
		if !readAgain(err) {
			return got, err
		}
		var none T
		if attempt == wholeAttempts {
			if rd.cutFound {
				err = fmt.Errorf("%w; its writer cut a reader's hold less than its Options.MaxHold ago, and none holds the copy until then", err)
			}
			return none, gaveUp(err, attempt)
		}
		select {
		case <-ctx.Done():
			return none, ctx.Err()
		case <-time.After(min(wholePause<<(attempt-1), 100*time.Millisecond)):
		}
	}
}

// hold asks the writer of the copy meta describes to pause, if this read
// wants it, and returns the copy's meta hash as of then: a change shipped
// since meta was read is in it. A Redis that does not take the hold (a
// replica, one out of memory, a user its ACL lets only read), and a hold
// its writer cut for another reader, are read without one, as before
// there were holds; a Redis that does not answer fails the read that
// follows.
func (rd *reader) hold(ctx context.Context, meta copyMeta) (copyMeta, error) {
	if !rd.wants || rd.held == meta.gen {
		return meta, nil
	}
	seq, err := rd.setHold(ctx, meta.gen)
	if changed := copyChanged(err); changed != nil {
		return meta, changed
	}
	if err != nil {
		rd.wants, rd.cutFound = false, scriptError(err) == "TBCUT"
		return meta, nil
	}
	rd.held, rd.since, rd.renewed = meta.gen, time.Now(), time.Now()
	if s, ok := seq.(string); ok && s == strconv.FormatUint(meta.seq, 10) {
		return meta, nil
	}
	return readMeta(ctx, rd.r, rd.k)
}

// renew keeps a hold the reader took from expiring while it reads. A
// hold the writer cut ends the read: the writer ships again.
func (rd *reader) renew(ctx context.Context) error {
	if rd.held == 0 || time.Since(rd.renewed) < rd.ttl/4 {
		return nil
	}
	_, err := rd.setHold(ctx, rd.held)
	if scriptError(err) == "TBCUT" {
		return fmt.Errorf("%w: %w after %v (its Options.MaxHold), and no reader holds the copy for as long again", ErrCopyChanging, errHoldCut, time.Since(rd.since).Round(time.Millisecond))
	}
	if changed := copyChanged(err); changed != nil {
		return changed
	}
	// A renewal Redis did not take lets the hold lapse, and a change then
	// shipped sends the read back; a Redis gone fails the read itself.
	if err == nil {
		rd.renewed = time.Now()
	}
	return nil
}

// setHold sets, or renews, the reader's hold on the copy of generation
// gen (holdScript), and answers the copy's sequence.
func (rd *reader) setHold(ctx context.Context, gen uint64) (any, error) {
	return rd.r.Eval(ctx, holdScript, false, []string{rd.k.meta(), rd.k.hold()}, gen, rd.token, rd.ttl.Milliseconds())
}

// unhold ends the reader's hold, if it took one, waiting for Redis a
// second at most: a hold Redis is not told of expires.
func (rd *reader) unhold() {
	if rd.held == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = rd.r.Eval(ctx, unholdScript, false, []string{rd.k.hold()}, rd.token)
	rd.held = 0
}

func (rd *reader) pull(ctx context.Context) (*engine.Snapshot, error) {
	meta, err := readMeta(ctx, rd.r, rd.k)
	if err != nil {
		return nil, err
	}
	counters, err := rd.readSmall(ctx, meta)
	if err == nil && counters == nil {
		if meta, err = rd.hold(ctx, meta); err == nil {
			counters, err = rd.readInChunks(ctx, meta)
		}
	}
	if err != nil {
		return nil, err
	}
	snap, err := engine.NewSnapshot(meta.config, meta.seq, meta.subs, counters)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadAnswer, err)
	}
	return snap, nil
}

// readSmall reads the counters of a copy that fit one read (at most
// chunkBytes bytes in at most readRanges parts) in one call, so that no
// change its writer ships can fall between two of its reads: only one
// shipped between the read of the meta hash and this call sends such a
// copy's read back. It returns nil for a larger copy.
func (rd *reader) readSmall(ctx context.Context, meta copyMeta) ([][]byte, error) {
	if _, ok := partCount(meta, readRanges); !ok {
		return nil, nil
	}
	total := uint64(0)
	for _, sub := range meta.subs {
		total += sub.Blocks * 64
	}
	if total > chunkBytes {
		return nil, nil
	}
	counters := make([][]byte, len(meta.subs))
	spans := make([]counterSpan, len(meta.subs))
	for i, sub := range meta.subs {
		counters[i] = make([]byte, sub.Blocks*64)
		spans[i] = counterSpan{sub: i, dst: counters[i]}
	}
	return counters, rd.readCounters(ctx, meta, spans...)
}

// readInChunks reads a copy's counters a chunk at a time, each
// sub-filter's grown as the copy answers, so that a directory claiming
// more than Redis holds cannot make it allocate the claim.
func (rd *reader) readInChunks(ctx context.Context, meta copyMeta) ([][]byte, error) {
	counters := make([][]byte, len(meta.subs))
	for i, sub := range meta.subs {
		size := sub.Blocks * 64
		region := make([]byte, 0, min(size, chunkBytes))
		for offset := uint64(0); offset < size; offset += chunkBytes {
			n := min(chunkBytes, size-offset)
			region = append(region, make([]byte, n)...)
			if err := rd.readCounters(ctx, meta, counterSpan{i, offset, region[offset:]}); err != nil {
				return nil, err
			}
		}
		counters[i] = region
	}
	return counters, nil
}

// chunkBytes is the most counter bytes one call to Redis writes or reads,
// and readRanges the most parts one read asks for.
const (
	chunkBytes = 8 << 20
	readRanges = 256
)

// counterSpan is len(dst) bytes of the counters of sub-filter sub of a
// copy, from byte offset.
type counterSpan struct {
	sub    int
	offset uint64
	dst    []byte
}

// readCounters reads spans of the copy meta describes, in calls of at most
// chunkBytes bytes and readRanges parts, all at the copy's sequence. It
// returns ErrCopyChanging if another copy replaced that one meanwhile, or
// its writer shipped a change. It advances the spans it is given as it
// reads them, and renews the reader's hold as it goes.
func (rd *reader) readCounters(ctx context.Context, meta copyMeta, spans ...counterSpan) error {
	r, k := rd.r, rd.k
	for len(spans) > 0 {
		if err := rd.renew(ctx); err != nil {
			return err
		}
		keys := []string{k.meta()}
		args := []any{meta.gen, meta.seq, ""}
		var asked []counterSpan // a range of one part each
		total := uint64(0)
		for len(spans) > 0 && total < chunkBytes && len(asked) < readRanges {
			sp := &spans[0]
			p := sp.offset / meta.part
			first := sp.offset - p*meta.part
			n := min(meta.part-first, uint64(len(sp.dst)), chunkBytes-total)
			keys = append(keys, k.part(meta.gen, meta.subs[sp.sub].Level, p))
			args = append(args, len(keys), first, first+n-1)
			asked = append(asked, counterSpan{sp.sub, sp.offset, sp.dst[:n]})
			total += n
			sp.offset, sp.dst = sp.offset+n, sp.dst[n:]
			if len(sp.dst) == 0 {
				spans = spans[1:]
			}
		}
		answer, err := r.Eval(ctx, readScript, true, keys, args...)
		if err != nil {
			if changed := copyChanged(err); changed != nil {
				return changed
			}
			return readError(err)
		}
		list, ok := answer.([]any)
		if !ok || len(list) != len(asked) {
			return fmt.Errorf("%w: %T of %d ranges for %d", ErrBadAnswer, answer, lenOf(answer), len(asked))
		}
		for j, a := range asked {
			level, n := meta.subs[a.sub].Level, len(a.dst)
			b, ok := list[j].(string)
			if !ok || len(b) > n {
				return fmt.Errorf("%w: level %d: %d bytes at %d, want %d", ErrBadAnswer, level, len(b), a.offset, n)
			}
			if len(b) < n {
				// A part a batch just made, not yet filled (see
				// applyOps), or damage: read again, a few times, and
				// then refuse, rather than take the claim of a copy
				// that may not hold what it says.
				return fmt.Errorf("%w: level %d: %d bytes at %d, want %d (a sub-filter its writer opened and has not filled yet, or stopped filling: its next full copy mends it)", errShortPart, level, len(b), a.offset, n)
			}
			copy(a.dst, b)
		}
	}
	return nil
}

// Restore creates a filter file at path from the copy in Redis: counters
// byte-identical, same parameters, directory and sequence, read at that
// sequence as Pull reads it, holding the copy of a writer that does not
// pause (ErrCopyChanging if it cannot be read so). It fails with
// engine.ErrExists if path exists, unless opts.Replace lets it replace a
// filter file (one a machine crash left unclean, say), and leaves no file,
// and the one it would replace as it was, if Redis answers anything wrong.
// The new filter's Stats().MemSeq is the copy's sequence, which may be
// ahead of an unclean file's durable sequence or behind it: a caller that
// keeps its own log of changes replays those after the copy's (see
// engine.UncleanError).
func Restore(ctx context.Context, r Redis, name, path string, opts *engine.Options) (*engine.Filter, error) {
	return restore(ctx, r, name, func(export io.Reader) (*engine.Filter, error) {
		return engine.Import(path, export, opts)
	})
}

// RestoreAs is Restore into a file that keeps presence bits, or counters
// only if countersOnly, whatever the filter the copy came from kept (see
// engine.ImportAs).
func RestoreAs(ctx context.Context, r Redis, name, path string, countersOnly bool, opts *engine.Options) (*engine.Filter, error) {
	return restore(ctx, r, name, func(export io.Reader) (*engine.Filter, error) {
		return engine.ImportAs(path, export, countersOnly, opts)
	})
}

// restore hands the copy to importer as an export stream, read from Redis
// a chunk at a time as importer takes it, so that the filter is never in
// memory whole. If the copy changes meanwhile, it starts again.
func restore(ctx context.Context, r Redis, name string, importer func(io.Reader) (*engine.Filter, error)) (*engine.Filter, error) {
	k, err := target(r, name)
	if err != nil {
		return nil, err
	}
	return readWhole(ctx, r, k, func(rd *reader) (*engine.Filter, error) { return rd.restoreOnce(ctx, importer) })
}

// restoreOnce is one attempt of restore. A failed read ends the stream
// short, so importer fails, leaving no file; the read's error is the one
// returned.
func (rd *reader) restoreOnce(ctx context.Context, importer func(io.Reader) (*engine.Filter, error)) (*engine.Filter, error) {
	meta, err := readMeta(ctx, rd.r, rd.k)
	if err != nil {
		return nil, err
	}
	small, err := rd.readSmall(ctx, meta)
	if err != nil {
		return nil, err
	}
	if small == nil {
		if meta, err = rd.hold(ctx, meta); err != nil {
			return nil, err
		}
	}
	pr, pw := io.Pipe()
	read := make(chan error, 1)
	go func() {
		err := engine.WriteExport(pw, meta.config, meta.seq, meta.subs, func(i int, offset uint64, dst []byte) error {
			if small != nil {
				copy(dst, small[i][offset:])
				return nil
			}
			return rd.readCounters(ctx, meta, counterSpan{i, offset, dst})
		})
		pw.CloseWithError(err)
		read <- err
	}()
	f, err := importer(pr)
	pr.Close() // a writer still writing stops
	if readErr := <-read; readErr != nil && !errors.Is(readErr, io.ErrClosedPipe) {
		return nil, readErr
	}
	return f, err
}
