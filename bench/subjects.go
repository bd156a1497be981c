package bench

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/cespare/xxhash/v2"
	"github.com/greatroar/blobloom"
	boom "github.com/tylertreat/BoomFilters"

	"github.com/tallybloom/tallybloom/engine"
)

// ErrorRate is the rate every filter is configured for.
const ErrorRate = 0.01

// Subject is a filter under measurement.
type Subject interface {
	Add(key []byte)
	Contains(key []byte) bool
	// Bytes is the memory (or file) the filter's bits, counters and
	// presence bits take.
	Bytes() uint64
}

// Remover is a Subject that can remove keys.
type Remover interface {
	Subject
	Remove(key []byte) bool
}

// Library names, as the report shows them. tallybloom is measured four
// ways: as created by default (a scalable chain whose first sub-filter is
// built for a tenth of the error rate, with presence bits), fixed (one
// sub-filter for the whole 1%, the guarantee the plain filters give),
// scalable with Options.LargePages, and fixed with Config.CountersOnly (no
// presence bits: the least memory, lookups read the counters).
const (
	Tallybloom         = "tallybloom"
	TallybloomFixed    = "tallybloom-fixed"
	TallybloomLarge    = "tallybloom-large"
	TallybloomCounters = "tallybloom-counters"
	BitsAndBlooms      = "bits-and-blooms"
	BoomCounting       = "boom-counting"
	BoomScalable       = "boom-scalable"
	Blobloom           = "blobloom"
	// Dablooms is measured in builds with the dablooms tag and cgo (see
	// package dablooms), which add it to Libraries.
	Dablooms = "dablooms"
)

// Libraries are the subjects measured at each size, tallybloom first.
var Libraries = []string{Tallybloom, TallybloomFixed, TallybloomLarge, TallybloomCounters, BitsAndBlooms, BoomCounting, BoomScalable, Blobloom}

// optional makes the filters of the libraries some builds add.
var optional = map[string]func(n uint64, dir string) (Subject, error){}

// NewSubject makes an empty filter of lib for n keys at ErrorRate; dir holds
// tallybloom's file.
func NewSubject(lib string, n uint64, dir string) (Subject, error) {
	switch lib {
	case Tallybloom, TallybloomFixed, TallybloomLarge, TallybloomCounters:
		fixed, countersOnly := lib == TallybloomFixed || lib == TallybloomCounters, lib == TallybloomCounters
		f, err := engine.Create(filepath.Join(dir, fmt.Sprintf("bench-%d.tb", rand.Uint64())),
			engine.Config{Capacity: n, ErrorRate: ErrorRate, Seed: 1, Fixed: fixed, CountersOnly: countersOnly},
			&engine.Options{LargePages: lib == TallybloomLarge})
		if err != nil {
			return nil, err
		}
		return &tally{f: f}, nil
	case BitsAndBlooms:
		return &bnb{f: bloom.NewWithEstimates(uint(n), ErrorRate)}, nil
	case BoomCounting:
		return &boomCounting{f: boom.NewCountingBloomFilter(uint(n), 4, ErrorRate)}, nil
	case BoomScalable:
		return &boomScalable{f: boom.NewScalableBloomFilter(uint(n), ErrorRate, 0.9)}, nil
	case Blobloom:
		return &blob{f: blobloom.NewOptimized(blobloom.Config{Capacity: n, FPRate: ErrorRate})}, nil
	}
	if newSubject, ok := optional[lib]; ok {
		return newSubject(n, dir)
	}
	return nil, fmt.Errorf("bench: unknown library %q", lib)
}

// tally is tallybloom: a file-backed, counting, scalable filter.
type tally struct {
	f *engine.Filter
}

// tallyID is the id of every key the benchmarks add: one sub-filter owns
// them all, as in a plain filter.
const tallyID = 1

func (t *tally) Add(key []byte)           { _ = t.f.Add(key, tallyID) }
func (t *tally) Contains(key []byte) bool { return t.f.Contains(key) }
func (t *tally) Remove(key []byte) bool   { return t.f.Remove(key, tallyID) == nil }
func (t *tally) Bytes() uint64 {
	s := t.f.Stats()
	return s.CounterBytes + s.PresenceBytes
}

// Close removes tallybloom's file.
func (t *tally) Close() error {
	err := t.f.Close()
	_ = os.Remove(t.f.Path())
	return err
}

type bnb struct{ f *bloom.BloomFilter }

func (b *bnb) Add(key []byte)           { b.f.Add(key) }
func (b *bnb) Contains(key []byte) bool { return b.f.Test(key) }
func (b *bnb) Bytes() uint64            { return uint64(b.f.Cap()) / 8 }

type boomCounting struct{ f *boom.CountingBloomFilter }

func (b *boomCounting) Add(key []byte)           { b.f.Add(key) }
func (b *boomCounting) Contains(key []byte) bool { return b.f.Test(key) }
func (b *boomCounting) Remove(key []byte) bool   { return b.f.TestAndRemove(key) }
func (b *boomCounting) Bytes() uint64            { return uint64(b.f.Capacity()) * 4 / 8 }

type boomScalable struct{ f *boom.ScalableBloomFilter }

func (b *boomScalable) Add(key []byte)           { b.f.Add(key) }
func (b *boomScalable) Contains(key []byte) bool { return b.f.Test(key) }
func (b *boomScalable) Bytes() uint64            { return uint64(b.f.Capacity()) / 8 }

// blob is blobloom with xxhash, as its documentation pairs them.
type blob struct{ f *blobloom.Filter }

func (b *blob) Add(key []byte)           { b.f.Add(xxhash.Sum64(key)) }
func (b *blob) Contains(key []byte) bool { return b.f.Has(xxhash.Sum64(key)) }
func (b *blob) Bytes() uint64            { return b.f.NumBits() / 8 }

// Keys are n generated keys of 16 to 64 bytes, the same for every run; set
// picks disjoint sets (members, non-members). They lie one after another in
// memory, in order, as keys read from a request or a stream do, so that a
// benchmark walking them in order times the filter, not a cache miss on the
// key itself.
func Keys(n int, set uint64) [][]byte {
	rng := rand.New(rand.NewPCG(set, 0x7a11b100))
	var a arena
	keys := keyHeaders(n)
	for i := range keys {
		k := a.alloc(16 + rng.IntN(49))
		binary.LittleEndian.PutUint64(k, set)
		binary.LittleEndian.PutUint64(k[8:], uint64(i))
		for j := 16; j < len(k); j++ {
			k[j] = byte('a' + rng.IntN(26))
		}
		keys[i] = k
	}
	return keys
}

// Packed copies keys next to each other, in order.
func Packed(keys [][]byte) [][]byte {
	var a arena
	out := keyHeaders(len(keys))
	for i, k := range keys {
		out[i] = a.alloc(len(k))
		copy(out[i], k)
	}
	return out
}

// arena hands out consecutive slices of large chunks, outside the heap
// (see keyRoom).
type arena struct{ free []byte }

const arenaChunk = 1 << 20

func (a *arena) alloc(n int) []byte {
	if len(a.free) < n {
		a.free = keyRoom(max(n, arenaChunk))
	}
	b := a.free[:n:n]
	a.free = a.free[n:]
	return b
}

// FalsePositiveRate probes s with keys never added.
func FalsePositiveRate(s Subject, probes [][]byte) float64 {
	hits := 0
	for _, k := range probes {
		if s.Contains(k) {
			hits++
		}
	}
	return float64(hits) / float64(len(probes))
}

// boomFilters is the number of sub-filters of a BoomFilters scalable
// filter. It has no accessor; reflection reads the length of its unexported
// slice.
func boomFilters(b *boomScalable) int {
	return reflect.ValueOf(b.f).Elem().FieldByName("filters").Len()
}
