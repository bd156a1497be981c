package mirror

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tallybloom/tallybloom/engine"
)

// Format is the layout of a copy in Redis, in its meta hash's format field;
// a reader refuses another. Its number follows the layout here and the key
// placement (engine.FormatVersion 2 placed keys differently from 1, so a
// copy of version 1 reads wrongly).
const Format = "tallybloom-mirror-2"

// keys names a filter's keys.
type keys struct{ name string }

func newKeys(name string) (keys, error) {
	if name == "" || strings.ContainsAny(name, "{}") {
		return keys{}, fmt.Errorf("%w: %q (not empty, no braces)", ErrInvalidName, name)
	}
	return keys{name}, nil
}

// target is the keys of name in r, which every call given a Redis checks
// first: a nil r, like a bad name, is refused before anything runs.
func target(r Redis, name string) (keys, error) {
	k, err := newKeys(name)
	if r == nil {
		err = errors.Join(fmt.Errorf("%w: a nil Redis", ErrInvalidInput), err)
	}
	return k, err
}

// filterGiven refuses a nil filter.
func filterGiven(f *engine.Filter) error {
	if f == nil {
		return fmt.Errorf("%w: a nil filter", ErrInvalidInput)
	}
	return nil
}

func (k keys) meta() string { return "{" + k.name + "}:meta" }

// pending names the hash of a copy being written, shaped as the meta hash:
// the switch renames it to the meta hash, and a copy that never became
// live (its writer stopped, or Redis failed, before the switch) is found
// through it and deleted.
func (k keys) pending() string { return "{" + k.name + "}:pending" }

// gens names the last generation handed to a copy (see startScript).
func (k keys) gens() string { return "{" + k.name + "}:gens" }

// owner names the claim on the name: the token of the process that writes
// its copies, which expires unless renewed (see claimLua).
func (k keys) owner() string { return "{" + k.name + "}:owner" }

// hold names the pause a reader of a whole copy asks of its writer: while
// it holds a reader, the writer ships no change and switches to no new
// copy, for Options.MaxHold at most, so that a copy read in many calls
// (Pull, Restore) stays at one sequence. It
// holds when the hold began and the reader's token, and expires unless
// renewed (see holdScript and heldLua).
func (k keys) hold() string { return "{" + k.name + "}:hold" }

func (k keys) part(gen uint64, level int, part uint64) string {
	return fmt.Sprintf("{%s}:g%d:l%d:p%d", k.name, gen, level, part)
}

// parts is the number of parts a region of size bytes takes.
func parts(size, partBytes uint64) uint64 { return (size + partBytes - 1) / partBytes }

// copyMeta is what the meta hash says of the live copy.
type copyMeta struct {
	gen, seq, part uint64
	config         engine.Config
	subs           []engine.SubFilterStats // geometry, ids and tallies
	// dirSum is the SHA-1 of the directory as the meta hash holds it, in
	// hex: what a checker's reads pin (see readScript).
	dirSum string
}

// configJSON and subJSON are the meta hash's encodings, with stable names.
type configJSON struct {
	Capacity   uint64  `json:"capacity"`
	ErrorRate  float64 `json:"error_rate"`
	Tightening float64 `json:"tightening"`
	Growth     float64 `json:"growth"`
	Seed       uint64  `json:"seed"`
	Fixed      bool    `json:"fixed"`
	// CountersOnly is the layout of the file the copy came from; a file
	// restored from the copy is made the same way.
	CountersOnly bool `json:"counters_only,omitempty"`
}

type subJSON struct {
	Level    int    `json:"level"`
	FirstID  uint64 `json:"first_id"`
	Capacity uint64 `json:"capacity"`
	K        int    `json:"k"`
	Blocks   uint64 `json:"blocks"`
	Flat     bool   `json:"flat,omitempty"`
}

func encodeConfig(c engine.Config) string {
	b, _ := json.Marshal(configJSON{c.Capacity, c.ErrorRate, c.Tightening, c.Growth, c.Seed, c.Fixed, c.CountersOnly})
	return string(b)
}

func encodeDir(subs []engine.SubFilterStats) string {
	dir := make([]subJSON, len(subs))
	for i, s := range subs {
		dir[i] = subJSON{s.Level, s.FirstID, s.Capacity, s.K, s.Blocks, s.Flat}
	}
	b, _ := json.Marshal(dir)
	return string(b)
}

func encodeTallies(count, maxID, nonZero uint64) string {
	return fmt.Sprintf("%d %d %d", count, maxID, nonZero)
}

func tallyField(level int) string { return "t:" + strconv.Itoa(level) }

// maxPendingParts bounds the parts a pending hash may name: more is not a
// copy the mirror wrote, and its parts are left alone.
const maxPendingParts = 1 << 16

// metaFields is the meta hash of a copy, as field and value pairs: the live
// copy's, or a pending copy's before its switch.
func metaFields(gen, seq, partBytes uint64, cfg engine.Config, subs []engine.SubFilterStats) []any {
	return append([]any{"gen", gen}, copyFields(seq, partBytes, cfg, subs)...)
}

// copyFields is metaFields but the generation, which startScript chooses.
func copyFields(seq, partBytes uint64, cfg engine.Config, subs []engine.SubFilterStats) []any {
	fields := []any{"format", Format, "seq", seq, "config", encodeConfig(cfg), "part", partBytes, "dir", encodeDir(subs)}
	for _, sub := range subs {
		fields = append(fields, tallyField(sub.Level), encodeTallies(sub.Count, sub.MaxID, sub.NonZero))
	}
	return fields
}

// partCount is the number of parts copy c is written in, or false if that
// is more than limit.
func partCount(c copyMeta, limit uint64) (uint64, bool) {
	total := uint64(0)
	for _, sub := range c.subs {
		if sub.Blocks > math.MaxUint64/64 {
			return 0, false
		}
		if total += parts(sub.Blocks*64, c.part); total > limit {
			return 0, false
		}
	}
	return total, true
}

// copyParts names the parts of copy c, oldest sub-filter first.
func (k keys) copyParts(c copyMeta) []string {
	var names []string
	for _, sub := range c.subs {
		for p := range parts(sub.Blocks*64, c.part) {
			names = append(names, k.part(c.gen, sub.Level, p))
		}
	}
	return names
}

// decodeMeta reads HGETALL's answer. Nothing in it is trusted: every field
// is checked, and anything else is ErrBadAnswer.
func decodeMeta(answer any) (copyMeta, error) {
	list, ok := answer.([]any)
	if !ok || len(list)%2 != 0 {
		return copyMeta{}, fmt.Errorf("%w: meta is %T", ErrBadAnswer, answer)
	}
	if len(list) == 0 {
		return copyMeta{}, ErrNotMirrored
	}
	fields := map[string]string{}
	for i := 0; i < len(list); i += 2 {
		k, ok1 := list[i].(string)
		v, ok2 := list[i+1].(string)
		if !ok1 || !ok2 {
			return copyMeta{}, fmt.Errorf("%w: meta field of type %T", ErrBadAnswer, list[i+1])
		}
		fields[k] = v
	}
	if fields["format"] != Format {
		return copyMeta{}, fmt.Errorf("%w: meta format %q, want %q", ErrBadAnswer, fields["format"], Format)
	}
	var m copyMeta
	var err error
	for _, f := range []struct {
		name string
		to   *uint64
	}{{"gen", &m.gen}, {"seq", &m.seq}, {"part", &m.part}} {
		if *f.to, err = strconv.ParseUint(fields[f.name], 10, 64); err != nil {
			return copyMeta{}, fmt.Errorf("%w: meta %s %q", ErrBadAnswer, f.name, fields[f.name])
		}
	}
	var cfg configJSON
	var dir []subJSON
	if json.Unmarshal([]byte(fields["config"]), &cfg) != nil || json.Unmarshal([]byte(fields["dir"]), &dir) != nil || m.part == 0 || m.part%64 != 0 {
		return copyMeta{}, fmt.Errorf("%w: meta config or directory", ErrBadAnswer)
	}
	sum := sha1.Sum([]byte(fields["dir"]))
	m.dirSum = hex.EncodeToString(sum[:])
	m.config = engine.Config{Capacity: cfg.Capacity, ErrorRate: cfg.ErrorRate, Tightening: cfg.Tightening, Growth: cfg.Growth, Seed: cfg.Seed, Fixed: cfg.Fixed, CountersOnly: cfg.CountersOnly}
	for _, d := range dir {
		s := engine.SubFilterStats{Level: d.Level, FirstID: d.FirstID, Capacity: d.Capacity, K: d.K, Blocks: d.Blocks, Flat: d.Flat, Bytes: d.Blocks * 64}
		if t, ok := fields[tallyField(d.Level)]; ok {
			if _, err := fmt.Sscanf(t, "%d %d %d", &s.Count, &s.MaxID, &s.NonZero); err != nil {
				return copyMeta{}, fmt.Errorf("%w: tallies of level %d %q", ErrBadAnswer, d.Level, t)
			}
		}
		m.subs = append(m.subs, s)
	}
	// Shapes are checked as the engine checks a file: a bad one is refused
	// before it is used to read or allocate anything.
	if _, err := engine.NewPlacement(m.config, m.subs); err != nil {
		return copyMeta{}, fmt.Errorf("%w: %v", ErrBadAnswer, err)
	}
	if err := m.config.Validate(); err != nil {
		return copyMeta{}, fmt.Errorf("%w: %v", ErrBadAnswer, err)
	}
	return m, nil
}
