package counting

import (
	"fmt"
	"math"
	"sync"
)

// The block shape is part of the file format and of the Redis copy; it never
// changes without a new format version.
const (
	// BlockBytes is the size of one block: one cache line.
	BlockBytes = 64
	// CountersPerBlock is the number of 4-bit counters in a block.
	CountersPerBlock = BlockBytes * 2
	// wordsPerBlock is the number of 64-bit counter words in a block.
	wordsPerBlock = BlockBytes / 8
	// PresenceBytesPerBlock is the size of a block's presence bits: one bit
	// for each of its counters.
	PresenceBytesPerBlock = CountersPerBlock / 8
	// MaxCounter is the saturated value of a counter.
	MaxCounter = 15
)

// Limits of a geometry.
const (
	// MaxK is the largest number of counters per key.
	MaxK = 32
	// MaxBytes bounds one filter's counter region (1 TiB).
	MaxBytes = 1 << 40
	// maxLoad is the largest number of keys per block the sizing model tracks;
	// blocks with more keys are counted as always giving a false positive.
	maxLoad = 256
	// MaxFlatBlocks and MaxFlatK bound a flat geometry: small enough that a
	// key touches at most one counter word per counter, and that an undo
	// record holds every word a change writes.
	MaxFlatBlocks = 8
	MaxFlatK      = 8
)

// Geometry is the shape of one filter: how many blocks and how many counters
// each key sets. It is computed once by [Plan] and then persisted, so a filter
// never depends on floating-point results computed on another machine.
type Geometry struct {
	Blocks uint64 // number of 64-byte blocks, at least 1
	K      int    // counters per key, 1..MaxK
	// Flat spreads each key's counters over the whole region instead of one
	// block. Only for tiny filters (at most MaxFlatBlocks blocks, k at most
	// MaxFlatK), where blocking would cost more room than cache lines save.
	Flat bool
}

// Bytes is the size of the counter region.
func (g Geometry) Bytes() uint64 { return g.Blocks * BlockBytes }

// PresenceBytes is the size of the presence bits of a filter of geometry g:
// one bit for each counter of a blocked geometry. A flat geometry, a few
// blocks that stay in the cache, has none.
func PresenceBytes(g Geometry) uint64 {
	if g.Flat {
		return 0
	}
	return g.Blocks * PresenceBytesPerBlock
}

// Counters is the number of counters in the region.
func (g Geometry) Counters() uint64 { return g.Blocks * CountersPerBlock }

// EstimatedKeys estimates the distinct keys held from the number of
// non-zero counters. Blocks receive Poisson loads, so the expected zero
// fraction is exp(-n k / m) as for a classic filter, and
// n = -(m/k) ln(zero fraction). With every counter non-zero that has no
// finite value: the counters say only that more keys are held than it
// gives with one counter left zero. The estimate then takes half a zero
// counter, (m/k) ln(2m), which is finite, so that Stats prints and
// encodes as JSON.
func (g Geometry) EstimatedKeys(nonZero uint64) float64 {
	m := float64(g.Counters())
	if nonZero == 0 || g.K == 0 {
		return 0
	}
	zero := max(m-float64(nonZero), 0.5)
	return -m / float64(g.K) * math.Log(zero/m)
}

// Validate reports whether g can describe a region.
func (g Geometry) Validate() error {
	if g.Blocks == 0 || g.Blocks > MaxBytes/BlockBytes {
		return fmt.Errorf("%w: %d blocks (want 1..%d)", ErrInvalidGeometry, g.Blocks, uint64(MaxBytes/BlockBytes))
	}
	if g.K < 1 || g.K > MaxK {
		return fmt.Errorf("%w: k=%d (want 1..%d)", ErrInvalidGeometry, g.K, MaxK)
	}
	if g.Flat && (g.Blocks > MaxFlatBlocks || g.K > MaxFlatK) {
		return fmt.Errorf("%w: flat geometry of %d blocks, k=%d (at most %d and %d)", ErrInvalidGeometry, g.Blocks, g.K, MaxFlatBlocks, MaxFlatK)
	}
	return nil
}

// FalsePositiveRate is the expected probability that a key never added is
// reported present once n distinct keys were added.
func (g Geometry) FalsePositiveRate(n uint64) float64 {
	if g.Validate() != nil {
		return 1
	}
	if g.Flat {
		return flatFalsePositiveRate(n, g.Counters(), g.K)
	}
	return loadModelOf(g.K).falsePositiveRate(float64(n) / float64(g.Blocks))
}

// flatFalsePositiveRate is the chance that a probe's k distinct counters
// are all covered once n keys have each set k distinct counters of m,
// chosen uniformly. By inclusion-exclusion over the probe's counters it is
// the sum over i of (-1)^i C(k,i) q_i^n, where q_i = C(m-i,k)/C(m,k) is the
// chance that one key misses i given counters. That sum's terms reach
// C(k,k/2) and cancel down to the rate, so where the rate is small the sum
// is mostly rounding (near 1e-15 it is off by ten times or more, either
// way), and coveredRate gives it instead.
func flatFalsePositiveRate(n, m uint64, k int) float64 {
	var rate float64
	choose := 1.0 // C(k, i)
	for i := 0; i <= k; i++ {
		logQ := 0.0
		for j := range k {
			if m <= uint64(i+j) {
				logQ = math.Inf(-1)
				break
			}
			logQ += math.Log(float64(m-uint64(i+j)) / float64(m-uint64(j)))
		}
		term := choose * math.Exp(float64(n)*logQ)
		if i%2 == 1 {
			term = -term
		}
		rate += term
		choose = choose * float64(k-i) / float64(i+1)
	}
	if rate < flatCancellation && n <= maxCoveredKeys {
		return coveredRate(n, m, k)
	}
	return min(max(rate, 0), 1)
}

// Below flatCancellation the inclusion-exclusion sum has lost too much to
// rounding. A rate that small needs few keys in at most 1024 counters (some
// 20 with k = 8, none with k = 1), so coveredRate, whose cost grows with the
// square of the keys, is only asked for a few; maxCoveredKeys bounds it.
const (
	flatCancellation = 1e-6
	maxCoveredKeys   = 256
)

// coveredRate is flatFalsePositiveRate by following how many of the m
// counters the n keys cover, whose terms are all positive.
func coveredRate(n, m uint64, k int) float64 {
	var rate float64
	coverage(int(m), k, int(n), func(j int, r float64) {
		if j == int(n) {
			rate = r
		}
	})
	return rate
}

// coverage follows how many of m counters are covered as keys arrive, each
// setting k distinct counters chosen uniformly: a key covers x new ones when
// c are covered with the hypergeometric chance C(m-c,x) C(c,k-x) / C(m,k).
// After each j = 0..keys keys it calls visit with the chance that a probe's
// k counters are all covered, C(c,k) / C(m,k) averaged over c. Every term
// is positive, so a small chance keeps its precision.
func coverage(m, k, keys int, visit func(j int, rate float64)) {
	logFactorial := make([]float64, m+1)
	for i := 1; i <= m; i++ {
		logFactorial[i] = logFactorial[i-1] + math.Log(float64(i))
	}
	logChoose := func(a, b int) float64 { return logFactorial[a] - logFactorial[b] - logFactorial[a-b] }
	total := logChoose(m, k)
	top := min(m, keys*k)            // the most counters the keys cover
	step := make([][]float64, top+1) // step[c][x]: the chance of x new when c are covered
	hit := make([]float64, top+1)
	for c := range step {
		step[c] = make([]float64, k+1)
		for x := 0; x <= k && c+x <= top; x++ {
			if x <= m-c && k-x <= c {
				step[c][x] = math.Exp(logChoose(m-c, x) + logChoose(c, k-x) - total)
			}
		}
		if c >= k {
			hit[c] = math.Exp(logChoose(c, k) - total)
		}
	}
	dist, next := make([]float64, top+1), make([]float64, top+1)
	dist[0] = 1
	for j := 0; ; j++ {
		var rate float64
		for c, p := range dist {
			rate += p * hit[c]
		}
		visit(j, rate)
		if j == keys {
			return
		}
		clear(next)
		for c, p := range dist {
			if p == 0 {
				continue
			}
			for x, q := range step[c] {
				if q != 0 {
					next[c+x] += p * q
				}
			}
		}
		dist, next = next, dist
	}
}

// Plan returns the smallest geometry whose false-positive rate stays at or
// below errorRate when it holds capacity keys.
//
// Blocks receive a Poisson-distributed number of keys, and each key sets k
// distinct counters of its block chosen uniformly. For each k the model gives
// the rate exactly as a function of the mean load; Plan finds the largest load
// that meets errorRate and keeps the k that needs the fewest blocks.
func Plan(capacity uint64, errorRate float64) (Geometry, error) {
	if capacity == 0 {
		return Geometry{}, fmt.Errorf("%w: capacity 0", ErrInvalidGeometry)
	}
	if !(errorRate > 0 && errorRate < 1) {
		return Geometry{}, fmt.Errorf("%w: error rate %v outside (0, 1)", ErrInvalidGeometry, errorRate)
	}
	var best Geometry
	worse := 0
	for k := 1; k <= MaxK; k++ {
		load := loadModelOf(k).maxLoad(errorRate)
		if load <= 0 {
			continue
		}
		blocks := math.Ceil(float64(capacity) / load)
		if blocks > MaxBytes/BlockBytes {
			continue
		}
		g := Geometry{Blocks: max(uint64(blocks), 1), K: k}
		switch {
		case best.Blocks == 0 || g.Blocks < best.Blocks:
			best, worse = g, 0
		default:
			// The size is unimodal in k; two steps past the best is enough.
			worse++
		}
		if worse >= 2 {
			break
		}
	}
	if best.Blocks == 0 {
		return Geometry{}, fmt.Errorf("%w: %d keys at error rate %g need more than %d bytes", ErrTooLarge, capacity, errorRate, uint64(MaxBytes))
	}
	if flat, ok := planFlat(capacity, errorRate); ok && flat.Blocks < best.Blocks {
		return flat, nil
	}
	return best, nil
}

// planFlat is the smallest flat geometry that meets errorRate, with the k
// that gives the lowest rate at that size.
func planFlat(capacity uint64, errorRate float64) (Geometry, bool) {
	for blocks := uint64(1); blocks <= MaxFlatBlocks; blocks++ {
		best, bestRate := Geometry{}, math.Inf(1)
		for k := 1; k <= MaxFlatK; k++ {
			g := Geometry{Blocks: blocks, K: k, Flat: true}
			if rate := g.FalsePositiveRate(capacity); rate <= errorRate && rate < bestRate {
				best, bestRate = g, rate
			}
		}
		if best.Blocks != 0 {
			return best, true
		}
	}
	return Geometry{}, false
}

// loadModel holds, for one k, the false-positive rate of a block that holds
// j keys, j = 0..maxLoad.
type loadModel struct {
	k       int
	perLoad [maxLoad + 1]float64
}

// loadModels builds the model of each k the first time it is asked for and
// keeps it: a model depends on k alone, and building one takes about a
// third of a millisecond, which Plan would otherwise pay for a dozen k each
// time a sub-filter opens.
var loadModels = func() (models [MaxK + 1]func() *loadModel) {
	for k := range models {
		models[k] = sync.OnceValue(func() *loadModel { return newLoadModel(k) })
	}
	return models
}()

// loadModelOf is the model of k, 1..MaxK.
func loadModelOf(k int) *loadModel { return loadModels[k]() }

// newLoadModel follows the covered counters of one block as keys arrive
// (see coverage): a probe is a false positive when all its k counters are
// covered.
func newLoadModel(k int) *loadModel {
	m := &loadModel{k: k}
	coverage(CountersPerBlock, k, maxLoad, func(j int, rate float64) { m.perLoad[j] = min(rate, 1) })
	return m
}

// falsePositiveRate averages the per-load rate over a Poisson load of mean lambda.
func (m *loadModel) falsePositiveRate(lambda float64) float64 {
	if lambda <= 0 {
		return 0
	}
	// The Poisson weights by their recurrence, p(j+1) = p(j) lambda/(j+1):
	// one exponential a call, where Plan's search makes thousands of calls.
	// exp(-lambda) underflows only past a mean of about 700 keys a block,
	// where the loads the model tracks weigh less than 1e-60.
	p := math.Exp(-lambda)
	var rate, mass float64
	for j := 0; j <= maxLoad; j++ {
		rate += p * m.perLoad[j]
		mass += p
		p *= lambda / float64(j+1)
	}
	return min(rate+tailWeight(p, lambda, mass), 1)
}

// tailWeight is the weight of the loads past the model, which count as
// certain false positives, given p, the weight of load maxLoad+1, and mass,
// the weight of the loads up to maxLoad. Where 1 - mass is near the
// rounding of mass, about 1e-16, it says nothing, and the tail's own
// weights are summed instead: a rate planned for 1e-15 or less is then
// what it says, not rounding noise.
func tailWeight(p, lambda, mass float64) float64 {
	if tail := 1 - mass; tail > 1e-9 {
		return tail
	}
	// The tail is this light only for a mean well below maxLoad, where the
	// weights past it fall by a factor of lambda/(j+1) < 1 a load.
	var tail float64
	for j := maxLoad + 1; p > 0x1p-30*tail; j++ {
		tail += p
		p *= lambda / float64(j+1)
	}
	return tail
}

// maxLoad is the largest mean load whose rate is at most errorRate.
func (m *loadModel) maxLoad(errorRate float64) float64 {
	lo, hi := 0.0, float64(maxLoad)/2
	if m.falsePositiveRate(hi) <= errorRate {
		return hi
	}
	for range 64 {
		mid := (lo + hi) / 2
		if m.falsePositiveRate(mid) <= errorRate {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
