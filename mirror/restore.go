package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tallybloom/tallybloom/engine"
)

// Pull reads the copy of the filter name from Redis into memory: the same
// parameters, directory, tallies and counter bytes, consistent at one
// generation.
func Pull(ctx context.Context, r Redis, name string) (*engine.Snapshot, error) {
	k, err := newKeys(name)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		snap, err := pull(ctx, r, k)
		if !errors.Is(err, errGenChanged) || attempt == genRetries {
			return snap, err
		}
		if err := waitGen(ctx, attempt); err != nil {
			return nil, err
		}
	}
}

func pull(ctx context.Context, r Redis, k keys) (*engine.Snapshot, error) {
	meta, err := readMeta(ctx, r, k)
	if err != nil {
		return nil, err
	}
	const chunk = 8 << 20
	counters := make([][]byte, len(meta.subs))
	for i, sub := range meta.subs {
		size := sub.Blocks * 64
		region := make([]byte, 0, min(size, chunk))
		for p := range parts(size, meta.part) {
			partSize := min(meta.part, size-p*meta.part)
			for first := uint64(0); first < partSize; first += chunk {
				last := min(first+chunk, partSize) - 1
				answer, err := r.Eval(ctx, readScript, true, []string{k.meta(), k.part(meta.gen, sub.Level, p)}, meta.gen, 2, first, last)
				if err != nil {
					if strings.HasPrefix(scriptError(err), "TBGEN") {
						return nil, errGenChanged
					}
					return nil, fmt.Errorf("mirror: reading the copy: %w", err)
				}
				list, ok := answer.([]any)
				if !ok || len(list) != 1 {
					return nil, fmt.Errorf("%w: %T", ErrBadAnswer, answer)
				}
				b, ok := list[0].(string)
				if !ok || uint64(len(b)) != last-first+1 {
					return nil, fmt.Errorf("%w: level %d part %d: %d bytes at %d, want %d (a missing or short part)", ErrBadAnswer, sub.Level, p, len(b), first, last-first+1)
				}
				region = append(region, b...)
			}
		}
		counters[i] = region
	}
	snap, err := engine.NewSnapshot(meta.config, meta.seq, meta.subs, counters)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadAnswer, err)
	}
	return snap, nil
}

// Restore creates a filter file at path from the copy in Redis: counters
// byte-identical, same parameters, directory and sequence. It fails with
// engine.ErrExists if path exists, and leaves no file if Redis answers
// anything wrong.
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

// restore pulls the copy and hands it to importer as an export stream.
func restore(ctx context.Context, r Redis, name string, importer func(io.Reader) (*engine.Filter, error)) (*engine.Filter, error) {
	snap, err := Pull(ctx, r, name)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(snap.Export(pw)) }()
	f, err := importer(pr)
	pr.Close()
	return f, err
}
