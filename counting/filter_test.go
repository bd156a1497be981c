package counting

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTestFilter builds a filter of g over zeroed counters, with presence
// bits if presence is set.
func newTestFilter(t testing.TB, g Geometry, presence bool) (*Filter, []byte) {
	t.Helper()
	region := make([]byte, g.Bytes())
	var bits []byte
	if presence {
		bits = make([]byte, PresenceBytes(g))
	}
	f, err := New(region, bits, g, 42)
	require.NoError(t, err)
	require.Equal(t, presence && !g.Flat, f.presence != nil)
	return f, region
}

func key(i int) []byte { return binary.LittleEndian.AppendUint64([]byte("key-"), uint64(i)) }

// probe is where Locate places the key of hash h in f.
func probe(f *Filter, h Hash) Probe {
	var p Probe
	f.Locate(h, &p)
	return p
}

// probeOf builds a probe over the given counters of block 0.
func probeOf(counters ...uint) Probe {
	var p Probe
	for _, c := range counters {
		p.masks[c>>4] |= 1 << nibbleShift(c)
		p.set[c>>6] |= presenceBit(c)
	}
	return p
}

func TestCounterOrderIsRedisBitfieldU4(t *testing.T) {
	f, region := newTestFilter(t, Geometry{Blocks: 1, K: 1}, true)
	// Counter i is in byte i/2, high nibble for even i (BITFIELD u4 #i).
	for _, c := range []uint{0, 1, 2, 17, 126, 127} {
		clear(region)
		p := probeOf(c)
		f.Increment(&p)
		want := make([]byte, BlockBytes)
		if c%2 == 0 {
			want[c/2] = 0x10
		} else {
			want[c/2] = 0x01
		}
		assert.Equal(t, want, region, "counter %d", c)
		assert.Equal(t, uint8(1), f.Counter(uint64(c)))
	}
}

func TestSaturationIsSticky(t *testing.T) {
	f, _ := newTestFilter(t, Geometry{Blocks: 1, K: 2}, true)
	p := probeOf(3, 40)
	for range 20 {
		f.Increment(&p)
	}
	assert.Equal(t, uint8(MaxCounter), f.Counter(3))
	other := probeOf(40, 41)
	f.Increment(&other)
	for range 20 {
		_, ok := f.Decrement(&p)
		require.True(t, ok, "a saturated counter never reaches zero")
	}
	assert.Equal(t, uint8(MaxCounter), f.Counter(3), "removes never decrement a saturated counter")
	assert.Equal(t, uint8(MaxCounter), f.Counter(40))
	assert.Equal(t, uint8(1), f.Counter(41), "neighbouring counters are untouched")
}

// Increment returns how many counters went from zero to one and Decrement
// how many went from one to zero, with presence bits (which Increment
// counts from) and without, in blocks crowded enough that keys share and
// saturate counters.
func TestChangesCountTheCountersTheyRaiseAndClear(t *testing.T) {
	for _, presence := range []bool{true, false} {
		f, _ := newTestFilter(t, Geometry{Blocks: 4, K: 7}, presence)
		h := NewHasher(9)
		nonZero := func() int {
			_, n, _ := f.Tally()
			return int(n)
		}
		for i := range 400 {
			p := probe(f, h.Key(key(i%100)))
			before := nonZero()
			raised := f.Increment(&p)
			require.Equal(t, nonZero()-before, raised, "presence %v, add %d", presence, i)
		}
		for i := range 400 {
			p := probe(f, h.Key(key(i%100)))
			before := nonZero()
			cleared, ok := f.Decrement(&p)
			require.True(t, ok)
			require.Equal(t, before-nonZero(), cleared, "presence %v, remove %d", presence, i)
		}
	}
}

// Held answers as Test does, and a Decrement that trusts what it kept
// changes the counters and the presence bits as one that reads them again,
// in blocks crowded enough that keys share and saturate counters, where
// a quarter of the keys removed were never added.
func TestDecrementAfterHeldIsDecrement(t *testing.T) {
	geometries := []Geometry{{Blocks: 4, K: 7}, {Blocks: 2, K: 3, Flat: true}}
	for _, g := range geometries {
		for _, presence := range []bool{true, false} {
			held, heldRegion := newTestFilter(t, g, presence)
			plain, plainRegion := newTestFilter(t, g, presence)
			h := NewHasher(9)
			for i := range 400 {
				p, q := probe(held, h.Key(key(i%100))), probe(plain, h.Key(key(i%100)))
				held.Increment(&p)
				plain.Increment(&q)
			}
			removed := 0
			for i := range 500 {
				k := h.Key(key(i % 125))
				p, q := probe(held, k), probe(plain, k)
				found := held.Held(&p)
				require.Equal(t, plain.Test(&q), found, "flat %v, presence %v, key %d", g.Flat, presence, i)
				var cleared int
				ok := false
				if found {
					cleared, ok = held.Decrement(&p)
				}
				wantCleared, wantOK := plain.Decrement(&q)
				require.Equal(t, wantOK, ok, "flat %v, presence %v, key %d", g.Flat, presence, i)
				require.Equal(t, wantCleared, cleared, "flat %v, presence %v, key %d", g.Flat, presence, i)
				require.Equal(t, plainRegion, heldRegion, "flat %v, presence %v, key %d", g.Flat, presence, i)
				require.Equal(t, plain.presence, held.presence, "flat %v, presence %v, key %d", g.Flat, presence, i)
				if ok {
					removed++
				}
			}
			require.Greater(t, removed, 100, "flat %v, presence %v", g.Flat, presence)
		}
	}
}

// What Held kept is forgotten when the probe is located again and when it
// is decremented: a Decrement after either reads the counters again.
func TestHeldIsForgottenByLocateAndDecrement(t *testing.T) {
	f, region := newTestFilter(t, Geometry{Blocks: 1, K: 3}, true)
	h := NewHasher(9)
	present := h.Key(key(0))
	p := probe(f, present)
	f.Increment(&p)
	absent := absentKey(t, f, h)

	require.True(t, f.Held(&p))
	f.Locate(absent, &p)
	before := append([]byte(nil), region...)
	_, ok := f.Decrement(&p)
	require.False(t, ok, "a probe located again is not held")
	require.Equal(t, before, region)

	f.Locate(present, &p)
	require.True(t, f.Held(&p))
	cleared, ok := f.Decrement(&p)
	require.True(t, ok)
	require.Equal(t, 3, cleared)
	_, ok = f.Decrement(&p)
	require.False(t, ok, "a decremented probe is not held")
	require.Equal(t, make([]byte, BlockBytes), region)
}

// absentKey is the hash of a key that f does not hold.
func absentKey(t *testing.T, f *Filter, h Hasher) Hash {
	t.Helper()
	for i := 1; i < 1000; i++ {
		k := h.Key(key(i))
		if p := probe(f, k); !f.Test(&p) {
			return k
		}
	}
	t.Fatal("every key is held")
	return Hash{}
}

func TestDecrementIsAllOrNothing(t *testing.T) {
	f, region := newTestFilter(t, Geometry{Blocks: 1, K: 3}, true)
	present := probeOf(5, 6, 7)
	f.Increment(&present)
	before := append([]byte(nil), region...)
	absent := probeOf(5, 6, 99) // counter 99 is zero
	cleared, ok := f.Decrement(&absent)
	assert.False(t, ok)
	assert.Zero(t, cleared)
	assert.Equal(t, before, region, "a refused decrement changes nothing")
	cleared, ok = f.Decrement(&present)
	assert.True(t, ok)
	assert.Equal(t, 3, cleared)
	assert.Equal(t, make([]byte, BlockBytes), region)
}

func TestProbeSetsKDistinctCountersInOneBlock(t *testing.T) {
	for _, k := range []int{1, 7, 20, MaxK} {
		f, _ := newTestFilter(t, Geometry{Blocks: 1000, K: k}, true)
		h := NewHasher(7)
		for i := range 2000 {
			p := probe(f, h.Key(key(i)))
			n := 0
			for _, m := range p.masks {
				n += bits.OnesCount64(m)
			}
			require.Equal(t, k, n, "key %d", i)
			require.Less(t, p.base/wordsPerBlock, uint64(1000))
		}
	}
}

// Contains walks the slot stream itself; it must test exactly the counters
// Probe finds, for every k, including those long enough to need several
// mixes of the stream.
func TestContainsAgreesWithProbe(t *testing.T) {
	planned, err := Plan(5000, 0.01)
	require.NoError(t, err)
	geometries := []Geometry{planned}
	for _, k := range []int{1, 9, 10, 19, MaxK} {
		// About half the counters set: both answers are common.
		geometries = append(geometries, Geometry{Blocks: 512, K: k})
	}
	for _, g := range geometries {
		for _, presence := range []bool{true, false} {
			t.Run(fmt.Sprintf("k=%d/presence=%v", g.K, presence), func(t *testing.T) {
				f, _ := newTestFilter(t, g, presence)
				h := NewHasher(1)
				added := int(float64(g.Counters()) * 0.69 / float64(g.K))
				for i := range added {
					p := probe(f, h.Key(key(i)))
					f.Increment(&p)
				}
				answers := map[bool]int{}
				for i := range added + 20000 {
					hk := h.Key(key(i))
					p := probe(f, hk)
					equal(t, f.Test(&p), f.Contains(hk), "key %d", i)
					if i < added {
						require.True(t, f.Contains(hk), "added key %d missing", i)
					}
					answers[f.Contains(hk)]++
				}
				require.Positive(t, answers[false], "no key was absent: the comparison proves nothing")
				require.Greater(t, answers[true], added, "no key never added was reported present")
			})
		}
	}
}

// ContainsBatch answers every hash as Contains does, for batches of any
// length, appending to what out holds.
func TestContainsBatchAgreesWithContains(t *testing.T) {
	planned, err := Plan(5000, 0.01)
	require.NoError(t, err)
	flat, err := Plan(100, 0.01)
	require.NoError(t, err)
	require.True(t, flat.Flat)
	for _, g := range []Geometry{planned, flat, {Blocks: 512, K: 10}, {Blocks: 512, K: MaxK}} {
		for _, presence := range []bool{true, false} {
			t.Run(fmt.Sprintf("k=%d/flat=%v/presence=%v", g.K, g.Flat, presence), func(t *testing.T) {
				f, _ := newTestFilter(t, g, presence)
				h := NewHasher(1)
				added := int(float64(g.Counters()) * 0.69 / float64(g.K))
				hashes := make([]Hash, added+1000)
				for i := range hashes {
					hashes[i] = h.Key(key(i))
					if i < added {
						p := probe(f, hashes[i])
						f.Increment(&p)
					}
				}
				want := []bool{true}
				for _, hk := range hashes {
					want = append(want, f.Contains(hk))
				}
				require.Contains(t, want[1:], false, "no key was absent: the comparison proves nothing")
				for _, n := range []int{0, 1, 63, 64, 65, 130, len(hashes)} {
					got := f.ContainsBatch(hashes[:n], []bool{true})
					require.Equal(t, want[:n+1], got, "batch of %d", n)
				}
			})
		}
	}
}

func TestStringHashEqualsBytesHash(t *testing.T) {
	h := NewHasher(99)
	for _, s := range []string{"", "a", "https://example.com/some/long/path/that/is/more/than/32/bytes"} {
		assert.Equal(t, h.Key([]byte(s)), h.String(s))
	}
	assert.NotEqual(t, NewHasher(1).String("a"), NewHasher(2).String("a"), "the seed changes the hash")
}

func TestMeasuredFalsePositiveRateMatchesPlan(t *testing.T) {
	for _, p := range []float64{0.01, 0.001} {
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			const n = 50_000
			g, err := Plan(n, p)
			require.NoError(t, err)
			f, _ := newTestFilter(t, g, true)
			h := NewHasher(3)
			for i := range n {
				pr := probe(f, h.Key(key(i)))
				f.Increment(&pr)
			}
			const probes = 1_000_000
			hits := 0
			for i := n; i < n+probes; i++ {
				if f.Contains(h.Key(key(i))) {
					hits++
				}
			}
			rate := float64(hits) / probes
			t.Logf("planned %g, measured %g (k=%d, %.1f bits/key)", p, rate, g.K, float64(g.Bytes()*8)/n)
			// Five standard deviations above the target is a failure.
			sigma := sqrt(p * (1 - p) / probes)
			assert.LessOrEqual(t, rate, p+5*sigma)
		})
	}
}

func sqrt(x float64) float64 {
	z := x
	for range 50 {
		z = (z + x/z) / 2
	}
	return z
}

func TestTally(t *testing.T) {
	f, _ := newTestFilter(t, Geometry{Blocks: 2, K: 4}, true)
	h := NewHasher(5)
	for i := range 10 {
		p := probe(f, h.Key(key(i)))
		f.Increment(&p)
	}
	sum, nz, sat := f.Tally()
	assert.Equal(t, uint64(40), sum, "sum is k times the keys while nothing saturates")
	assert.Positive(t, nz)
	assert.Zero(t, sat)
}

func TestNewRejectsBadRegions(t *testing.T) {
	g := Geometry{Blocks: 2, K: 3}
	_, err := New(make([]byte, 64), nil, g, 0)
	assert.True(t, errors.Is(err, ErrInvalidGeometry))
	_, err = New(make([]byte, 129)[1:], nil, g, 0)
	assert.True(t, errors.Is(err, ErrInvalidGeometry), "misaligned")
	_, err = New(make([]byte, 128), nil, Geometry{Blocks: 2, K: 0}, 0)
	assert.True(t, errors.Is(err, ErrInvalidGeometry))
	_, err = New(make([]byte, 128), nil, Geometry{Blocks: 2, K: MaxK + 1}, 0)
	assert.True(t, errors.Is(err, ErrInvalidGeometry))
	_, err = New(make([]byte, 128), make([]byte, 16), g, 0)
	assert.True(t, errors.Is(err, ErrInvalidGeometry), "presence bits for one block of two")
	_, err = New(make([]byte, 128), make([]byte, 33)[1:], g, 0)
	assert.True(t, errors.Is(err, ErrInvalidGeometry), "misaligned presence bits")
	flat := Geometry{Blocks: 2, K: 3, Flat: true}
	_, err = New(make([]byte, 128), make([]byte, 32), flat, 0)
	assert.True(t, errors.Is(err, ErrInvalidGeometry), "a flat geometry has no presence bits")
	_, err = New(make([]byte, 128), make([]byte, 32), g, 0)
	assert.NoError(t, err)
}

func TestPlan(t *testing.T) {
	for _, bad := range []struct {
		n uint64
		p float64
	}{{0, 0.01}, {10, 0}, {10, 1}, {10, -1}, {10, 2}} {
		_, err := Plan(bad.n, bad.p)
		assert.True(t, errors.Is(err, ErrInvalidGeometry), "%+v", bad)
	}
	_, err := Plan(1<<60, 1e-9)
	assert.True(t, errors.Is(err, ErrTooLarge))

	prev := uint64(0)
	for _, p := range []float64{0.1, 0.01, 0.001, 1e-4, 1e-6} {
		g, err := Plan(100_000, p)
		require.NoError(t, err)
		assert.LessOrEqual(t, g.FalsePositiveRate(100_000), p)
		assert.Greater(t, g.Blocks, prev, "a tighter rate needs more room")
		prev = g.Blocks
		// One block fewer would miss the target: the plan is the smallest.
		smaller := Geometry{Blocks: g.Blocks - 1, K: g.K}
		assert.Greater(t, smaller.FalsePositiveRate(100_000), p)
	}
	g, err := Plan(1, 0.5)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), g.Blocks)
}

func TestFrozenAnswersAsTheFilterDid(t *testing.T) {
	g, err := Plan(3000, 0.01)
	require.NoError(t, err)
	f, _ := newTestFilter(t, g, true)
	h := NewHasher(4)
	for i := range 3000 {
		p := probe(f, h.Key(key(i)))
		f.Increment(&p)
	}
	bits := make([]byte, FrozenBytes(g))
	f.Freeze(bits)
	assert.Equal(t, g.Bytes()/4, uint64(len(bits)), "a quarter of the counters")
	z, err := NewFrozen(bits, g, 42)
	require.NoError(t, err)
	for i := range 50_000 {
		require.Equal(t, f.Contains(h.Key(key(i))), z.Contains(h.Key(key(i))), "key %d", i)
	}
	_, err = NewFrozen(bits[1:], g, 42)
	assert.ErrorIs(t, err, ErrInvalidGeometry)
}

func TestFrozenBitOrderIsRedisGetbit(t *testing.T) {
	f, _ := newTestFilter(t, Geometry{Blocks: 1, K: 1}, true)
	p := probeOf(0, 9)
	f.Increment(&p)
	bits := make([]byte, 16)
	f.Freeze(bits)
	assert.Equal(t, byte(0x80), bits[0], "GETBIT offset 0 is the top bit of byte 0")
	assert.Equal(t, byte(0x40), bits[1], "offset 9 is bit 6 of byte 1")
}

func TestTinyFiltersPlanFlat(t *testing.T) {
	g, err := Plan(100, 0.01)
	require.NoError(t, err)
	assert.True(t, g.Flat, "%+v", g)
	assert.Equal(t, uint64(8), g.Blocks, "1024 counters, against 9 blocks blocked")
	assert.LessOrEqual(t, g.FalsePositiveRate(100), 0.01)
	big, err := Plan(100_000, 0.01)
	require.NoError(t, err)
	assert.False(t, big.Flat, "large filters stay blocked")

	assert.NoError(t, Geometry{Blocks: MaxBytes / BlockBytes, K: 3}.Validate(), "the largest region")
	assert.ErrorIs(t, Geometry{Blocks: MaxBytes/BlockBytes + 1, K: 3}.Validate(), ErrInvalidGeometry)
	assert.ErrorIs(t, Geometry{Blocks: MaxFlatBlocks + 1, K: 3, Flat: true}.Validate(), ErrInvalidGeometry)
	assert.ErrorIs(t, Geometry{Blocks: 2, K: MaxFlatK + 1, Flat: true}.Validate(), ErrInvalidGeometry)
}

func TestFlatFilter(t *testing.T) {
	g, err := Plan(100, 0.01)
	require.NoError(t, err)
	require.True(t, g.Flat)
	f, region := newTestFilter(t, g, true)
	h := NewHasher(9)
	var total int
	for i := range 100 {
		p := probe(f, h.Key(key(i)))
		n := 0
		p.Spans(func(offset uint64, length int) {
			assert.Equal(t, 8, length, "a flat change writes words")
			assert.Less(t, offset, uint64(len(region)))
			n++
		})
		require.LessOrEqual(t, n, g.K)
		f.Increment(&p)
		total += g.K
	}
	sum, _, _ := f.Tally()
	assert.Equal(t, uint64(total), sum, "k distinct counters per key")

	bits := make([]byte, FrozenBytes(g))
	f.Freeze(bits)
	z, err := NewFrozen(bits, g, 42)
	require.NoError(t, err)
	falsePositives := 0
	for i := range 300_000 {
		hk := h.Key(key(i))
		p := probe(f, hk)
		equal(t, f.Test(&p), f.Contains(hk))
		require.Equal(t, f.Contains(hk), z.Contains(hk))
		if i < 100 {
			require.True(t, f.Contains(hk))
		} else if f.Contains(hk) {
			falsePositives++
		}
	}
	rate := float64(falsePositives) / 299_900
	t.Logf("flat %+v: planned %.4f, measured %.4f", g, g.FalsePositiveRate(100), rate)
	assert.LessOrEqual(t, rate, 0.01)

	p := probe(f, h.Key(key(3)))
	_, ok := f.Decrement(&p)
	assert.True(t, ok)
	sum, _, _ = f.Tally()
	assert.Equal(t, uint64(total-g.K), sum)
}

func TestFlatRateIsExact(t *testing.T) {
	// One key with k=2 in 4 counters: a probe hits when both its counters
	// are among the key's two: 1/C(4,2).
	assert.InDelta(t, 1.0/6, flatFalsePositiveRate(1, 4, 2), 1e-12)
	assert.InDelta(t, 0, flatFalsePositiveRate(0, 128, 3), 1e-12)
}

func TestShapeAnswersAsTheFilter(t *testing.T) {
	for _, n := range []uint64{100, 20_000} { // flat and blocked
		g, err := Plan(n, 0.01)
		require.NoError(t, err)
		f, region := newTestFilter(t, g, true)
		h := NewHasher(2)
		for i := range int(n) {
			p := probe(f, h.Key(key(i)))
			f.Increment(&p)
		}
		s, err := NewShape(g, 42)
		require.NoError(t, err)
		for i := range 30_000 {
			hk := h.Key(key(i))
			off, length := s.Locate(hk)
			require.Equal(t, f.Contains(hk), s.Test(hk, region[off:off+length]), "key %d, flat %v", i, g.Flat)
		}
		off, _ := s.Locate(h.Key(key(0)))
		assert.False(t, s.Test(h.Key(key(0)), region[off:off+3]), "missing bytes read as zeros")
		// Cut at every length, the bytes read as the range with zeros past
		// the cut: a counter in the first byte past it included.
		for i := range 50 {
			hk := h.Key(key(i))
			off, length := s.Locate(hk)
			for cut := range int(length) {
				padded := make([]byte, length)
				copy(padded, region[off:off+uint64(cut)])
				require.Equal(t, s.Test(hk, padded), s.Test(hk, region[off:off+uint64(cut)]), "key %d cut at %d", i, cut)
			}
		}
	}
}

// The presence bits follow the counters through adds and removes, and lie
// in the order of the frozen form.
func TestPresenceBitsFollowTheCounters(t *testing.T) {
	g := Geometry{Blocks: 16, K: 9}
	f, region := newTestFilter(t, g, true)
	counters, err := New(region, nil, g, 42) // the same counters, frozen from them
	require.NoError(t, err)
	h := NewHasher(3)
	frozen := make([]byte, FrozenBytes(g))
	presence := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f.presence))), PresenceBytes(g))
	rng := rand.New(rand.NewPCG(1, 2))
	held := map[int]int{}
	removed := 0
	for step := range 5000 {
		i := rng.IntN(300)
		p := probe(f, h.Key(key(i)))
		if held[i] > 0 && rng.IntN(2) == 0 {
			_, ok := f.Decrement(&p)
			require.True(t, ok)
			held[i]--
			removed++
		} else {
			f.Increment(&p)
			held[i]++
		}
		counters.Freeze(frozen)
		require.Equal(t, frozen, presence, "step %d", step)
	}
	require.Zero(t, f.StalePresence())
	require.Greater(t, removed, 1000)
	for i, n := range held {
		if n > 0 {
			require.True(t, f.Contains(h.Key(key(i))), "key %d", i)
		}
	}
}

// StalePresence finds the blocks whose bits disagree with their counters;
// RebuildPresenceOf rebuilds the blocks a byte range of the counters lies
// in, and no others; RebuildPresence rebuilds them all.
func TestRebuildPresence(t *testing.T) {
	g := Geometry{Blocks: 8, K: 5}
	f, region := newTestFilter(t, g, true)
	h := NewHasher(3)
	for i := range 100 {
		p := probe(f, h.Key(key(i)))
		f.Increment(&p)
	}
	want := append([]uint64(nil), f.presence...)
	clear(f.presence)
	assert.Equal(t, uint64(8), f.StalePresence())
	f.RebuildPresenceOf(BlockBytes+60, 8) // the end of block 1, the start of block 2
	assert.Equal(t, uint64(6), f.StalePresence())
	assert.Equal(t, want[2:6], f.presence[2:6])
	f.RebuildPresenceOf(7*BlockBytes, 1000) // past the end: up to it
	f.RebuildPresenceOf(8*BlockBytes, 64)   // wholly past the end: nothing
	assert.Equal(t, uint64(5), f.StalePresence())
	f.RebuildPresence()
	assert.Equal(t, want, f.presence)
	assert.Zero(t, f.StalePresence())
	region[BlockBytes+3] ^= 0x11 // two counters of block 1 changed behind the filter's back
	assert.Equal(t, uint64(1), f.StalePresence())

	counters, _ := newTestFilter(t, g, false)
	counters.RebuildPresenceOf(0, 64) // no presence bits: nothing to do
	assert.Zero(t, counters.StalePresence())
}

// presenceFlags of a word's non-zero flags agrees with reading the sixteen
// counters one at a time, for every counter alone at every value and for
// random words: counter c at bit 7-c of byte c/8.
func TestPresenceFlags(t *testing.T) {
	oneByOne := func(w uint64) (want uint16) {
		for c := range uint(16) {
			if w>>nibbleShift(c)&MaxCounter != 0 {
				want |= 1 << (c/8*8 + 7 - c%8)
			}
		}
		return want
	}
	for c := range uint(16) {
		for v := range uint64(MaxCounter + 1) {
			w := v << nibbleShift(c)
			require.Equal(t, oneByOne(w), presenceFlags(nonZero(w)), "counter %d at %d", c, v)
		}
	}
	rng := rand.New(rand.NewPCG(4, 4))
	for range 100_000 {
		w := rng.Uint64() & rng.Uint64() & rng.Uint64() // many zero nibbles
		require.Equal(t, oneByOne(w), presenceFlags(nonZero(w)), "%#x", w)
	}
}

// equal is require.Equal for comparable values, without its reflection
// on success: for the loops that check hundreds of thousands of cases,
// where require.Equal took most of the time (and, emulated, a minute).
func equal[T comparable](t *testing.T, want, got T, msgAndArgs ...any) {
	if got != want {
		t.Helper()
		require.Equal(t, want, got, msgAndArgs...)
	}
}

// setMasks undoes presenceFlags for every one of the 65 536 sets of each
// counter word's presence bits: a change raises exactly the counters a
// lookup tests, and touches no other word.
func TestSetMasksUndoesPresenceFlags(t *testing.T) {
	var masks [wordsPerBlock]uint64
	for i := range wordsPerBlock {
		for flags := range uint64(1 << 16) {
			var set [2]uint64
			set[i/4] = flags << (16 * (i % 4))
			setMasks(&masks, set)
			for j, m := range masks {
				if j != i {
					equal(t, 0, m, "word %d, %#04x: a mask in word %d", i, flags, j)
				}
			}
			equal(t, 0, masks[i]&^lowBits, "word %d, %#04x: a bit off the counters' low bits", i, flags)
			equal(t, uint16(flags), presenceFlags(masks[i]), "word %d, %#04x", i, flags)
		}
	}
}

// streamCounters draws the key's k counters from the slot stream one chunk
// at a time, as docs/FORMAT.md gives it: as presence bits of the block, as
// the low bit of each in the block's counter words, and how many chunks it
// drew to find them.
func streamCounters(f *Filter, h Hash) (set [2]uint64, masks [wordsPerBlock]uint64, drawn int) {
	chunks := f.chunks(h)
	for taken := 0; taken < f.geometry.K; drawn++ {
		if c := chunks.next(); set[c>>6]&presenceBit(c) == 0 {
			set[c>>6] |= presenceBit(c)
			masks[c>>4] |= 1 << nibbleShift(c)
			taken++
		}
	}
	return set, masks, drawn
}

// The slot stream is the file format's placement of a key's counters (see
// docs/FORMAT.md). presenceSet and Locate draw it their own quicker ways; they
// must take exactly the counters the stream takes, for every k: keys that
// draw a counter twice among their first chunks, and keys whose counters
// need several mixes of the stream, included. presenceSet's masks must be
// the key's counters alone, whatever the room held before.
func TestKeysTakeTheSlotStreamsCounters(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	eachStreamKey(t, rng, func(f *Filter, k int, h Hash, want [2]uint64, masks [wordsPerBlock]uint64) {
		var got [wordsPerBlock]uint64
		for i := range got {
			got[i] = rng.Uint64()
		}
		lo, hi := f.presenceSet(h, &got)
		equal(t, want, [2]uint64{lo, hi}, "k=%d", k)
		equal(t, masks, got, "k=%d", k)
		lo, hi = presenceSetAt(h.Derived^f.slotSalt, k)
		equal(t, want, [2]uint64{lo, hi}, "k=%d: in Go", k)
		setMasks(&got, [2]uint64{lo, hi})
		equal(t, masks, got, "k=%d: in Go", k)
		p := probe(f, h)
		equal(t, want, p.set, "k=%d", k)
		equal(t, masks, p.masks, "k=%d", k)
	})
}

// eachStreamKey calls check with 5 000 random keys for every k from 1 to
// MaxK, each with its counters as streamCounters draws them, and fails if,
// from k = 4, too few of them drew a counter twice for check to have
// tested such keys.
func eachStreamKey(t *testing.T, rng *rand.Rand, check func(f *Filter, k int, h Hash, set [2]uint64, masks [wordsPerBlock]uint64)) {
	t.Helper()
	for k := 1; k <= MaxK; k++ {
		f, _ := newTestFilter(t, Geometry{Blocks: 64, K: k}, true)
		twice := 0
		for range 5000 {
			h := Hash{Sum: rng.Uint64(), Derived: rng.Uint64()}
			set, masks, drawn := streamCounters(f, h)
			if drawn > k {
				twice++
			}
			check(f, k, h, set, masks)
		}
		if k >= 4 {
			require.Greater(t, twice, 100, "k=%d: too few keys drew a counter twice to test them", k)
		}
	}
}

// A lookup tests the key's presence bits with presenceContains, or, with
// counters only, the key's counters with countersContains: in assembly on
// amd64, in Go (presenceContainsGo, countersContainsGo) elsewhere. Both
// must answer as the slot stream does, for every k: found where the block
// holds the key's set, not found where it lacks one counter of it,
// whatever else is set; keys whose first chunks took a counter twice
// included.
func TestLookupsAgreeWithTheSlotStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	eachStreamKey(t, rng, func(f *Filter, k int, h Hash, set [2]uint64, masks [wordsPerBlock]uint64) {
		other := [2]uint64{rng.Uint64(), rng.Uint64()}
		lacking := set // the set less one of its bits, counter gone
		var gone uint
		for {
			w, b := rng.IntN(2), rng.IntN(64)
			if bit := uint64(1) << b; lacking[w]&bit != 0 {
				lacking[w] &^= bit
				gone = uint(64*w + (b ^ 7)) // presenceBit's order
				break
			}
		}
		state := h.Derived ^ f.slotSalt
		for _, c := range []struct {
			presence [2]uint64
			found    bool
		}{
			{set, true},
			{[2]uint64{set[0] | other[0], set[1] | other[1]}, true},
			{lacking, false},
			{[2]uint64{lacking[0] | other[0]&^set[0], lacking[1] | other[1]&^set[1]}, false},
		} {
			equal(t, c.found, presenceContains(&c.presence, state, k), "k=%d", k)
			equal(t, c.found, presenceContainsGo(&c.presence, state, k), "k=%d", k)
		}

		// Counter blocks: the key's counters at 1 and every other zero,
		// or every counter random and the key's at least 1; each whole
		// and less the counter gone.
		var ones, random [wordsPerBlock]uint64
		for i, m := range masks {
			ones[i] = m
			for n := range 16 {
				nibble := uint64(rng.IntN(MaxCounter+1)) << (4 * n)
				if m>>(4*n)&1 != 0 && nibble == 0 {
					nibble = uint64(1+rng.IntN(MaxCounter)) << (4 * n)
				}
				random[i] |= nibble
			}
		}
		for _, words := range []*[wordsPerBlock]uint64{&ones, &random} {
			equal(t, true, countersContains(words, state, k), "k=%d", k)
			equal(t, true, countersContainsGo(words, state, k), "k=%d", k)
			words[gone>>4] &^= MaxCounter << nibbleShift(gone)
			equal(t, false, countersContains(words, state, k), "k=%d", k)
			equal(t, false, countersContainsGo(words, state, k), "k=%d", k)
		}
	})
}

// The undo record saves the spans a probe names before the change writes:
// every counter byte an Increment or a Decrement writes must lie in one.
func TestSpansCoverEveryByteAChangeWrites(t *testing.T) {
	for _, capacity := range []uint64{100, 10_000} {
		g, err := Plan(capacity, 0.01)
		require.NoError(t, err)
		f, region := newTestFilter(t, g, true)
		h := NewHasher(3)
		for i := range 2000 {
			p := probe(f, h.Key(key(i%300)))
			inSpan := make([]bool, len(region))
			p.Spans(func(offset uint64, length int) {
				for b := offset; b < offset+uint64(length); b++ {
					inSpan[b] = true
				}
			})
			before := append([]byte(nil), region...)
			if i < 1000 {
				f.Increment(&p)
			} else {
				f.Decrement(&p)
			}
			for b := range region {
				if region[b] != before[b] && !inSpan[b] {
					t.Fatalf("flat %v, change %d wrote byte %d, outside the probe's spans", g.Flat, i, b)
				}
			}
		}
	}
}
