package mirror

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tallybloom/tallybloom/engine"
)

// Description is what Redis holds under a name, read in one step: the live
// copy, if there is one, the writer that holds the name, and a copy being
// written.
type Description struct {
	// Live reports a live copy; the fields up to SubFilters describe it.
	Live       bool
	Generation uint64
	// Seq is the sequence of the last change the copy holds.
	Seq uint64
	// PartBytes is the largest counter string.
	PartBytes uint64
	Config    engine.Config
	// SubFilters are the copy's sub-filters, with their geometry, ids and
	// tallies (Count, MaxID, NonZero); ErrorRate, Overfilled and
	// EstimatedKeys are not kept in Redis and are zero.
	SubFilters []engine.SubFilterStats
	// Writer names the host and process that holds the name, "" if none;
	// WriterFor is how long its claim lasts unless it renews it.
	Writer    string
	WriterFor time.Duration
	// Pending is the generation of a copy being written, 0 if none.
	Pending uint64
	// Reader names the host and process of a reader that holds the live
	// copy (a Pull or a Restore; see Stats.Held), "" if none; ReaderFor
	// is how long its hold lasts unless it renews it, and ReaderHeld how
	// long it has held the copy (0 where the hold does not say). While it
	// holds the copy, its writer ships no change, for the writer's
	// Options.MaxHold at most. HoldCut reports that the writer stopped
	// waiting for Reader's hold: the writer ships, Reader's read fails,
	// and for ReaderFor no reader holds the copy.
	Reader     string
	ReaderFor  time.Duration
	ReaderHeld time.Duration
	HoldCut    bool
	// Memory is the memory of the Redis server that holds the name's keys
	// (on a cluster, the node of its slot), or nil where Redis does not
	// let a script ask (INFO renamed away, or denied to the user).
	Memory *Memory
}

// Memory is a Redis server's memory, as INFO memory gives it.
type Memory struct {
	// Used is the memory it uses, Max its maxmemory (0: no limit).
	Used, Max uint64
	// Policy is its maxmemory-policy: with a policy that evicts keys
	// without an expiry (allkeys-lru, say), Redis may evict parts of the
	// copy (ErrPartLost).
	Policy string
}

// Evicts reports whether m's policy may evict the copy's keys, which have
// no expiry.
func (m Memory) Evicts() bool { return strings.HasPrefix(m.Policy, "allkeys-") }

// memoryScript asks the server that holds KEYS[1] for its memory.
var memoryScript = newScript(`return redis.call('INFO', 'memory')`)

// memoryOf is the memory of the server that holds k's keys, or nil where
// it cannot be asked or its answer is not INFO's.
func memoryOf(ctx context.Context, r Redis, k keys) *Memory {
	answer, err := r.Eval(ctx, memoryScript, true, []string{k.meta()})
	info, ok := answer.(string)
	if err != nil || !ok {
		return nil
	}
	var m Memory
	var used, limit bool
	for line := range strings.Lines(info) {
		field, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch field {
		case "used_memory":
			m.Used, err = strconv.ParseUint(value, 10, 64)
			used = err == nil
		case "maxmemory":
			m.Max, err = strconv.ParseUint(value, 10, 64)
			limit = err == nil
		case "maxmemory_policy":
			m.Policy = value
		}
	}
	if !used || !limit {
		return nil
	}
	return &m
}

// describeScript reads a name's live copy, claim, pending copy and hold.
// KEYS: the meta hash, the claim, the pending hash, the hold. It answers
// the meta hash's fields and values, the claim or false, its time to live
// in ms, the pending copy's generation or false, the hold or false and its
// time to live, and Redis's clock in ms (see heldLua).
var describeScript = newScript(nowLua + `
return {redis.call('HGETALL', KEYS[1]), redis.call('GET', KEYS[2]), redis.call('PTTL', KEYS[2]), redis.call('HGET', KEYS[3], 'gen'),
  redis.call('GET', KEYS[4]), redis.call('PTTL', KEYS[4]), string.format('%.0f', now)}
`)

// Describe reads what Redis holds under name. It returns ErrNotMirrored if
// Redis holds nothing of it: no live copy, no writer, no copy being
// written.
func Describe(ctx context.Context, r Redis, name string) (Description, error) {
	k, err := target(r, name)
	if err != nil {
		return Description{}, err
	}
	answer, err := r.Eval(ctx, describeScript, true, []string{k.meta(), k.owner(), k.pending(), k.hold()})
	if err != nil {
		if strings.Contains(err.Error(), "WRONGTYPE") {
			return Description{}, fmt.Errorf("%w: a key of %q is not a tallybloom mirror's: %v", ErrBadAnswer, name, err)
		}
		return Description{}, fmt.Errorf("mirror: describing %q: %w", name, err)
	}
	parts, ok := answer.([]any)
	if !ok || len(parts) != 7 {
		return Description{}, fmt.Errorf("%w: a description of %T", ErrBadAnswer, answer)
	}
	var d Description
	meta, err := decodeMeta(parts[0])
	switch {
	case err == nil:
		d.Live, d.Generation, d.Seq, d.PartBytes, d.Config, d.SubFilters = true, meta.gen, meta.seq, meta.part, meta.config, meta.subs
	case !errors.Is(err, ErrNotMirrored):
		return Description{}, err
	}
	if holder, ok := parts[1].(string); ok {
		ttl, _ := parts[2].(int64)
		d.Writer, d.WriterFor = holderOf(holder), time.Duration(max(ttl, 0))*time.Millisecond
	}
	if h, ok := holdOf(parts[4], parts[6]); ok {
		ttl, _ := parts[5].(int64)
		d.Reader, d.ReaderFor, d.ReaderHeld, d.HoldCut = holderOf(h.token), time.Duration(max(ttl, 0))*time.Millisecond, h.held, h.cut
	}
	if gen, ok := parts[3].(string); ok {
		if d.Pending, err = strconv.ParseUint(gen, 10, 64); err != nil {
			return Description{}, fmt.Errorf("%w: pending generation %q", ErrBadAnswer, gen)
		}
	}
	if !d.Live && d.Writer == "" && d.Pending == 0 {
		return Description{}, fmt.Errorf("%w: %q", ErrNotMirrored, name)
	}
	d.Memory = memoryOf(ctx, r, k)
	return d, nil
}

// aHold is a hold's value (see heldLua) read: the reader's token, how long
// it has held the copy by Redis's clock (0 if the value does not say), and
// whether the writer cut it.
type aHold struct {
	token string
	held  time.Duration
	cut   bool
}

// holdOf reads a hold's value, or reports none, at now, Redis's clock in
// ms as describeScript answers it.
func holdOf(value, now any) (aHold, bool) {
	v, ok := value.(string)
	if !ok {
		return aHold{}, false
	}
	var h aHold
	v, h.cut = strings.CutPrefix(v, "!")
	h.token = v
	since, token, ok := strings.Cut(v, " ")
	if !ok || since == "" || strings.Trim(since, "0123456789") != "" {
		return h, true // no start: set by hand, or by an older reader
	}
	h.token = token
	start, err1 := strconv.ParseInt(since, 10, 64)
	clock, _ := now.(string)
	ms, err2 := strconv.ParseInt(clock, 10, 64)
	if err1 == nil && err2 == nil && ms > start {
		h.held = time.Duration(ms-start) * time.Millisecond
	}
	return h, true
}
