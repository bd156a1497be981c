package counting

import (
	"errors"
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// poissonAverage is the model's rate at mean load lambda computed the long
// way: each Poisson weight from its own logarithm, exp(-lambda + j
// ln(lambda) - ln(j!)), and the loads past the model weighed one by one too
// where 1 - mass would be rounding.
func poissonAverage(m *loadModel, lambda float64) float64 {
	weight := func(j int) float64 {
		lgamma, _ := math.Lgamma(float64(j + 1))
		return math.Exp(-lambda + float64(j)*math.Log(lambda) - lgamma)
	}
	var rate, mass float64
	for j := 0; j <= maxLoad; j++ {
		rate += weight(j) * m.perLoad[j]
		mass += weight(j)
	}
	tail := 1 - mass
	if tail < 1e-6 {
		tail = 0
		for j := maxLoad + 1; j < 4*maxLoad; j++ {
			tail += weight(j)
		}
	}
	return min(rate+tail, 1)
}

func TestFalsePositiveRateIsThePoissonAverage(t *testing.T) {
	for _, k := range []int{1, 3, 7, 10, 14, MaxK} {
		m := loadModelOf(k)
		for lambda := 0.05; lambda < 2000; lambda *= 1.3 {
			want, got := poissonAverage(m, lambda), m.falsePositiveRate(lambda)
			assert.InDelta(t, want, got, want*1e-9, "k=%d, lambda=%g", k, lambda)
		}
	}
	assert.Zero(t, loadModelOf(7).falsePositiveRate(0))
	// Far past the loads the model tracks, every lookup is a false positive.
	assert.Equal(t, 1.0, loadModelOf(7).falsePositiveRate(5000))
}

// flatExact is flatFalsePositiveRate's inclusion-exclusion sum in exact
// rationals, where nothing cancels to rounding.
func flatExact(n, m uint64, k int) float64 {
	rate := new(big.Rat)
	choose := big.NewRat(1, 1) // C(k, i)
	for i := 0; i <= k; i++ {
		q := big.NewRat(1, 1) // C(m-i, k) / C(m, k)
		for j := range k {
			if m <= uint64(i+j) {
				q.SetInt64(0)
				break
			}
			q.Mul(q, big.NewRat(int64(m)-int64(i+j), int64(m)-int64(j)))
		}
		term := new(big.Rat).Mul(choose, new(big.Rat).SetInt(new(big.Int).Exp(q.Num(), big.NewInt(int64(n)), nil)))
		term.Quo(term, new(big.Rat).SetInt(new(big.Int).Exp(q.Denom(), big.NewInt(int64(n)), nil)))
		if i%2 == 1 {
			term.Neg(term)
		}
		rate.Add(rate, term)
		choose.Mul(choose, big.NewRat(int64(k-i), int64(i+1)))
	}
	f, _ := rate.Float64()
	return f
}

func TestFlatRateMatchesExactRationals(t *testing.T) {
	for _, m := range []uint64{128, 512, 1024} {
		for _, k := range []int{1, 3, 6, MaxFlatK} {
			for _, n := range []uint64{1, 2, 3, 5, 10, 20, 40} {
				// Above flatCancellation the sum keeps about eight digits.
				want := flatExact(n, m, k)
				assert.InDelta(t, want, flatFalsePositiveRate(n, m, k), want*1e-7, "n=%d m=%d k=%d", n, m, k)
			}
		}
	}
}

// Targets far below the rounding of 1 - mass, about 1e-16, as the deep
// levels of a chain built for 1e-12 have, are met, and by the smallest
// geometry.
func TestPlanMeetsTinyRates(t *testing.T) {
	for _, rate := range []float64{1e-12, 1e-15, 1e-16, 1e-18} {
		g, err := Plan(1000, rate)
		require.NoError(t, err)
		assert.LessOrEqual(t, g.FalsePositiveRate(1000), rate, "%g: %+v", rate, g)
		smaller := Geometry{Blocks: g.Blocks - 1, K: g.K}
		assert.Greater(t, smaller.FalsePositiveRate(1000), rate, "%g: %+v", rate, g)
		// A key or two fit a flat geometry, whose rate the rationals give.
		for _, capacity := range []uint64{1, 2} {
			g, err := Plan(capacity, rate)
			require.NoError(t, err)
			if g.Flat {
				assert.LessOrEqual(t, flatExact(capacity, g.Counters(), g.K), rate, "%g: %+v", rate, g)
			}
		}
	}
}

// Opening a sub-filter plans it under the writer's lock, so Plan must not
// rebuild a load model, a third of a millisecond each, every time.
func TestPlanReusesLoadModels(t *testing.T) {
	want, err := Plan(1_000_000, 0.001)
	require.NoError(t, err)
	var got Geometry
	allocs := testing.AllocsPerRun(3, func() { got, err = Plan(1_000_000, 0.001) })
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Zero(t, allocs)
}

// With every counter non-zero the estimate is the most the counters can
// tell, finite, not an infinity that Stats could not encode as JSON.
func TestEstimatedKeysOfAFullRegion(t *testing.T) {
	g := Geometry{Blocks: 4, K: 7}
	m := g.Counters()
	full := g.EstimatedKeys(m)
	assert.False(t, math.IsInf(full, 0) || math.IsNaN(full), "%v", full)
	assert.Greater(t, full, g.EstimatedKeys(m-1))
	assert.InDelta(t, float64(m)/7*math.Log(2*float64(m)), full, 1e-9)
	assert.Zero(t, g.EstimatedKeys(0))
}

// FuzzPlan holds Plan to its contract for any capacity and rate: a
// geometry that is valid and meets the rate at the capacity, or an error
// that says which limit was passed.
func FuzzPlan(f *testing.F) {
	f.Add(uint64(1_000_000), 0.01)
	f.Add(uint64(1), 1e-15)
	f.Add(uint64(20), 1e-9)
	f.Add(uint64(1000), 1e-18)
	f.Add(uint64(1<<60), 1e-9)
	f.Fuzz(func(t *testing.T, capacity uint64, rate float64) {
		g, err := Plan(capacity, rate)
		if err != nil {
			require.True(t, errors.Is(err, ErrInvalidGeometry) || errors.Is(err, ErrTooLarge), "%v", err)
			return
		}
		require.NoError(t, g.Validate())
		require.LessOrEqual(t, g.FalsePositiveRate(capacity), rate, "%+v", g)
	})
}
