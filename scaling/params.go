package scaling

import (
	"errors"
	"fmt"
	"math"

	"github.com/tallybloom/tallybloom/counting"
)

// MaxSubFilters is the largest number of retained sub-filters, and so the
// number of levels.
const MaxSubFilters = 64

// Params are the persisted parameters that shape a chain.
type Params struct {
	Capacity   uint64  // keys in a level-0 sub-filter
	ErrorRate  float64 // false-positive bound of the whole chain
	Tightening float64 // ratio r of error rates between levels
	Growth     float64 // capacity factor between levels
	// Fixed keeps the chain to its level-0 sub-filter, built for the whole
	// ErrorRate: it never grows, and adds past its capacity overfill it.
	Fixed bool
}

// Validate reports every problem with p at once.
func (p Params) Validate() error {
	var errs []error
	if p.Capacity == 0 {
		errs = append(errs, fmt.Errorf("%w: capacity must be at least 1", ErrInvalidParams))
	}
	if !(p.ErrorRate > 0 && p.ErrorRate < 1) {
		errs = append(errs, fmt.Errorf("%w: error rate %v outside (0, 1)", ErrInvalidParams, p.ErrorRate))
	}
	if !(p.Tightening > 0 && p.Tightening < 1) {
		errs = append(errs, fmt.Errorf("%w: tightening %v outside (0, 1)", ErrInvalidParams, p.Tightening))
	}
	if !(p.Growth >= 1) || math.IsInf(p.Growth, 1) {
		errs = append(errs, fmt.Errorf("%w: growth %v below 1 or not finite", ErrInvalidParams, p.Growth))
	}
	return errors.Join(errs...)
}

// Level is the shape of a sub-filter at one level.
type Level struct {
	Level     int
	Capacity  uint64
	ErrorRate float64
	Geometry  counting.Geometry
}

// Capacity is the capacity of a sub-filter at level.
func (p Params) levelCapacity(level int) (uint64, error) {
	c := math.Ceil(float64(p.Capacity) * math.Pow(p.Growth, float64(level)))
	if c >= math.MaxUint64/2 {
		return 0, fmt.Errorf("%w: capacity at level %d overflows", counting.ErrTooLarge, level)
	}
	return max(uint64(c), p.Capacity), nil
}

// LevelErrorRate is the error rate a sub-filter at level is built for. A
// fixed chain has one sub-filter, which gets the whole rate.
func (p Params) LevelErrorRate(level int) float64 {
	if p.Fixed {
		return p.ErrorRate
	}
	return p.ErrorRate * (1 - p.Tightening) * math.Pow(p.Tightening, float64(level))
}

// Level plans the sub-filter at level. Planning takes about a third of a
// millisecond: it is done once, when the sub-filter opens, and its result
// is persisted.
func (p Params) Level(level int) (Level, error) {
	if level < 0 || level >= MaxSubFilters {
		return Level{}, fmt.Errorf("%w: level %d", ErrInvalidParams, level)
	}
	capacity, err := p.levelCapacity(level)
	if err != nil {
		return Level{}, err
	}
	rate := p.LevelErrorRate(level)
	g, err := counting.Plan(capacity, rate)
	if err != nil {
		return Level{}, err
	}
	return Level{Level: level, Capacity: capacity, ErrorRate: rate, Geometry: g}, nil
}
