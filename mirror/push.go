package mirror

import (
	"context"
	"errors"
	"time"

	"github.com/tallybloom/tallybloom/engine"
)

// Push writes a full copy of f into Redis under name, replacing what is
// there, in one switch: checkers see the old copy or the new. The copy is
// f's Snapshot, exact at one sequence, which Push returns: a writer may
// have changed f since the caller last looked. The name is claimed while
// Push runs (ErrNameTaken if another writer holds it) and given up after.
func Push(ctx context.Context, f *engine.Filter, r Redis, name string, opts *Options) (seq uint64, err error) {
	if err := filterGiven(f); err != nil {
		return 0, err
	}
	p, err := newPusher(r, name, opts)
	if err != nil {
		return 0, err
	}
	defer p.release()
	return p.Push(ctx, f)
}

// Pusher writes full copies into Redis under one name, again and again,
// and holds the name's claim from NewPusher to Close, renewing it: no
// other writer copies under the name between two of its pushes, as one
// would between two calls of Push (a mirror attached elsewhere, or another
// process pushing another file, each replacing the other's copy in turn).
// It is for a process that copies a file it does not write whenever the
// file changes, as tallybloom mirror push --follow does.
type Pusher struct {
	r    Redis
	keys keys
	opts Options
	who  owner
	// ctx ends with Close; done is closed when renewals have stopped.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	// gen and seq are the last copy this Pusher made live.
	gen, seq uint64
}

// NewPusher starts holding name for pushes: it claims the name at once and
// every third of Options.ClaimTTL after, while Redis answers and no other
// writer holds it; a push says when one does (ErrNameTaken). It holds the
// name until Close, which must be called.
func NewPusher(r Redis, name string, opts *Options) (*Pusher, error) {
	p, err := newPusher(r, name, opts)
	if err != nil {
		return nil, err
	}
	p.done = make(chan struct{})
	go p.renew()
	return p, nil
}

func newPusher(r Redis, name string, opts *Options) (*Pusher, error) {
	k, o, err := checkArgs(r, name, opts)
	if err != nil {
		return nil, err
	}
	p := &Pusher{r: timed{r, o.Timeout}, keys: k, opts: o, who: newOwner(o.ClaimTTL)}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// renew claims the name now and again until Close. A failed claim is left
// to the next push to report.
func (p *Pusher) renew() {
	defer close(p.done)
	for {
		_ = claim(p.ctx, p.r, p.keys, p.who)
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(p.opts.ClaimTTL / 3):
		}
	}
}

// Push writes a full copy of f, as the function Push does, and returns
// the sequence it copied. One call of Push or Holds at a time; no Push
// after Close (ErrClosed).
func (p *Pusher) Push(ctx context.Context, f *engine.Filter) (uint64, error) {
	if p.ctx.Err() != nil {
		return 0, ErrClosed
	}
	if err := filterGiven(f); err != nil {
		return 0, err
	}
	snap, err := f.Snapshot()
	if err != nil {
		return 0, err
	}
	again := retry{backoff: p.opts.Backoff, attempts: callRetries}
	old, gen, err := writeCopy(ctx, p.r, p.keys, p.who, snapshotSource(snap), p.opts, again)
	if err != nil {
		return 0, err
	}
	err = switchCopy(ctx, p.r, p.keys, p.who, old, gen, snap.MemSeq(), p.opts.MaxHold)
	if errors.Is(err, errReplaced) {
		return 0, errors.Join(err, discardCopy(ctx, p.r, p.keys, gen, p.opts.PartBytes, snap.SubFilters()))
	}
	if err != nil {
		return 0, err
	}
	p.gen, p.seq = gen, snap.MemSeq()
	return p.seq, nil
}

// Holds reports whether the copy Redis holds live is the last this Pusher
// made, at sequence seq: a filter now at seq need not be pushed again. It
// does not when Redis lost that copy, or holds another writer's, even one
// at the same sequence.
func (p *Pusher) Holds(ctx context.Context, seq uint64) (bool, error) {
	live, err := readMeta(ctx, p.r, p.keys)
	if errors.Is(err, ErrNotMirrored) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return p.gen != 0 && live.gen == p.gen && live.seq == seq, nil
}

// Close stops renewing the claim and gives the name up; if Redis cannot
// be told, the claim expires.
func (p *Pusher) Close() error {
	p.cancel()
	<-p.done
	p.release()
	return nil
}

// release gives the name up and ends the Pusher.
func (p *Pusher) release() {
	p.cancel()
	release(p.r, p.keys, p.who, p.opts.Timeout)
}
