package mirror

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tallybloom/tallybloom/engine"
)

// Checker answers Contains from the copy in Redis, with no local file. Its
// reads are read-only scripts, so they may run on replicas. It is safe for
// concurrent use.
type Checker struct {
	r    Redis
	keys keys
	// view is the live copy's shape, read again when another copy becomes
	// live or its sub-filters change.
	view atomic.Pointer[view]
}

type view struct {
	meta      copyMeta
	placement *engine.Placement
}

// NewChecker checks against the copy of the filter name.
func NewChecker(ctx context.Context, r Redis, name string) (*Checker, error) {
	k, err := target(r, name)
	if err != nil {
		return nil, err
	}
	c := &Checker{r: r, keys: k}
	if err := c.reload(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Checker) reload(ctx context.Context) error {
	meta, err := readMeta(ctx, c.r, c.keys)
	if err != nil {
		return err
	}
	p, err := engine.NewPlacement(meta.config, meta.subs)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadAnswer, err)
	}
	c.view.Store(&view{meta: meta, placement: p})
	return nil
}

// Seq is the sequence of the last change the copy held when last read.
func (c *Checker) Seq() uint64 { return c.view.Load().meta.seq }

// Contains reports whether key was probably in the filter.
func (c *Checker) Contains(ctx context.Context, key []byte) (bool, error) {
	out, err := c.ContainsBatch(ctx, [][]byte{key}, nil)
	if err != nil {
		return false, err
	}
	return out[0], nil
}

// ContainsBatch checks every key in one round trip, appending to out[:0].
// Should another copy have become live (a full copy), or the copy's
// sub-filters have changed (one opened, or retired), since the checker
// last read them, it reads them again first: answers come from one copy at
// one moment, never a mix, and take in every sub-filter the copy holds.
func (c *Checker) ContainsBatch(ctx context.Context, keys [][]byte, out []bool) ([]bool, error) {
	for attempt := 0; ; attempt++ {
		v := c.view.Load()
		answers, err := c.read(ctx, v, keys)
		if err == nil {
			return append(out[:0], answers...), nil
		}
		if !errors.Is(err, ErrCopyChanging) {
			return nil, err
		}
		if attempt+1 == checkAttempts {
			return nil, gaveUp(err, attempt+1)
		}
		if err := waitCheck(ctx, attempt); err != nil {
			return nil, err
		}
		if err := c.reload(ctx); err != nil {
			return nil, err
		}
	}
}

// checkAttempts bounds the reads of a check that the copy's changes send
// back to the start (ErrCopyChanging); waitCheck spaces them out a little
// more each time. A check reads in one call, so it starts again only when
// another copy became live or the sub-filters changed, seldom twice in a
// row.
const checkAttempts = 11

func waitCheck(ctx context.Context, attempt int) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(attempt) * 2 * time.Millisecond):
		return nil
	}
}

// read fetches, for every key, its range in every sub-filter, and tests it.
func (c *Checker) read(ctx context.Context, v *view, keys [][]byte) ([]bool, error) {
	subs := v.meta.subs
	part := v.meta.part
	redisKeys := []string{c.keys.meta()}
	index := map[string]int{}
	args := make([]any, 0, 3+3*len(keys)*len(subs))
	args = append(args, v.meta.gen, "", v.meta.dirSum)
	placed := make([]engine.Placed, len(keys))
	for i, key := range keys {
		placed[i] = v.placement.Place(key)
		for s, sub := range subs {
			off, n := placed[i].Range(s)
			p := off / part
			name := c.keys.part(v.meta.gen, sub.Level, p)
			ki, ok := index[name]
			if !ok {
				redisKeys = append(redisKeys, name)
				ki = len(redisKeys)
				index[name] = ki
			}
			args = append(args, ki, off-p*part, off-p*part+n-1)
		}
	}
	answer, err := c.r.Eval(ctx, readScript, true, redisKeys, args...)
	if err != nil {
		if changed := copyChanged(err); changed != nil {
			return nil, changed
		}
		return nil, readError(err)
	}
	ranges, ok := answer.([]any)
	if !ok || len(ranges) != len(keys)*len(subs) {
		return nil, fmt.Errorf("%w: %T of %d ranges for %d", ErrBadAnswer, answer, lenOf(answer), len(keys)*len(subs))
	}
	out := make([]bool, len(keys))
	for i := range keys {
		for s := range subs {
			b, ok := ranges[i*len(subs)+s].(string)
			if !ok {
				return nil, fmt.Errorf("%w: a range of type %T", ErrBadAnswer, ranges[i*len(subs)+s])
			}
			if placed[i].Holds(s, []byte(b)) {
				out[i] = true
				break
			}
		}
	}
	return out, nil
}

func lenOf(answer any) int {
	if list, ok := answer.([]any); ok {
		return len(list)
	}
	return -1
}
