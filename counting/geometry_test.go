package counting

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// poissonAverage is the model's rate at mean load lambda computed the long
// way: each Poisson weight from its own logarithm, exp(-lambda + j
// ln(lambda) - ln(j!)).
func poissonAverage(m *loadModel, lambda float64) float64 {
	var rate, mass float64
	for j := 0; j <= maxLoad; j++ {
		lgamma, _ := math.Lgamma(float64(j + 1))
		p := math.Exp(-lambda + float64(j)*math.Log(lambda) - lgamma)
		rate += p * m.perLoad[j]
		mass += p
	}
	return min(rate+max(0, 1-mass), 1)
}

func TestFalsePositiveRateIsThePoissonAverage(t *testing.T) {
	for _, k := range []int{1, 3, 7, 10, 14, MaxK} {
		m := loadModelOf(k)
		for lambda := 0.05; lambda < 2000; lambda *= 1.3 {
			want, got := poissonAverage(m, lambda), m.falsePositiveRate(lambda)
			// Below about 1e-12 both carry the rounding of 1 - mass, some
			// 1e-16, and agree only to that.
			assert.InDelta(t, want, got, max(want*1e-9, 1e-15), "k=%d, lambda=%g", k, lambda)
		}
	}
	assert.Zero(t, loadModelOf(7).falsePositiveRate(0))
	// Far past the loads the model tracks, every lookup is a false positive.
	assert.Equal(t, 1.0, loadModelOf(7).falsePositiveRate(5000))
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
