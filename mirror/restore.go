package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tallybloom/tallybloom/engine"
)

// Pull reads the copy of the filter name from Redis into memory: the same
// parameters, directory, tallies and counter bytes, all at the copy's one
// sequence. A change shipped during the read starts it again, after a
// pause that doubles each time; after about 1.3 s of those it returns
// ErrCopyChanging.
func Pull(ctx context.Context, r Redis, name string) (*engine.Snapshot, error) {
	k, err := target(r, name)
	if err != nil {
		return nil, err
	}
	return readWhole(ctx, func() (*engine.Snapshot, error) { return pull(ctx, r, k) })
}

// wholeAttempts and wholePause bound the reads of a whole copy (Pull,
// Restore) that the copy's changes send back to the start: the pause after
// the nth is wholePause<<(n-1), at most 100 ms, about 1.3 s in all, as
// engine.Filter.Snapshot waits in a reader for its writer to pause.
const (
	wholeAttempts = 20
	wholePause    = time.Millisecond
)

// readWhole runs once, a read of the whole copy, again while the copy
// changes under it or a part is not yet filled, at most wholeAttempts
// times.
func readWhole[T any](ctx context.Context, once func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		got, err := once()
		if !readAgain(err) {
			return got, err
		}
		var none T
		if attempt == wholeAttempts {
			return none, gaveUp(err, attempt)
		}
		select {
		case <-ctx.Done():
			return none, ctx.Err()
		case <-time.After(min(wholePause<<(attempt-1), 100*time.Millisecond)):
		}
	}
}

func pull(ctx context.Context, r Redis, k keys) (*engine.Snapshot, error) {
	meta, err := readMeta(ctx, r, k)
	if err != nil {
		return nil, err
	}
	counters, err := readSmall(ctx, r, k, meta)
	if err == nil && counters == nil {
		counters, err = readInChunks(ctx, r, k, meta)
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
func readSmall(ctx context.Context, r Redis, k keys, meta copyMeta) ([][]byte, error) {
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
	return counters, readCounters(ctx, r, k, meta, spans...)
}

// readInChunks reads a copy's counters a chunk at a time, each
// sub-filter's grown as the copy answers, so that a directory claiming
// more than Redis holds cannot make it allocate the claim.
func readInChunks(ctx context.Context, r Redis, k keys, meta copyMeta) ([][]byte, error) {
	counters := make([][]byte, len(meta.subs))
	for i, sub := range meta.subs {
		size := sub.Blocks * 64
		region := make([]byte, 0, min(size, chunkBytes))
		for offset := uint64(0); offset < size; offset += chunkBytes {
			n := min(chunkBytes, size-offset)
			region = append(region, make([]byte, n)...)
			if err := readCounters(ctx, r, k, meta, counterSpan{i, offset, region[offset:]}); err != nil {
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
// reads them.
func readCounters(ctx context.Context, r Redis, k keys, meta copyMeta, spans ...counterSpan) error {
	for len(spans) > 0 {
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
// sequence as Pull reads it (ErrCopyChanging if it cannot be). It fails with
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
	return readWhole(ctx, func() (*engine.Filter, error) { return restoreOnce(ctx, r, k, importer) })
}

// restoreOnce is one attempt of restore. A failed read ends the stream
// short, so importer fails, leaving no file; the read's error is the one
// returned.
func restoreOnce(ctx context.Context, r Redis, k keys, importer func(io.Reader) (*engine.Filter, error)) (*engine.Filter, error) {
	meta, err := readMeta(ctx, r, k)
	if err != nil {
		return nil, err
	}
	small, err := readSmall(ctx, r, k, meta)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	read := make(chan error, 1)
	go func() {
		err := engine.WriteExport(pw, meta.config, meta.seq, meta.subs, func(i int, offset uint64, dst []byte) error {
			if small != nil {
				copy(dst, small[i][offset:])
				return nil
			}
			return readCounters(ctx, r, k, meta, counterSpan{i, offset, dst})
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
