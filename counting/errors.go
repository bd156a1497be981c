package counting

import "errors"

var (
	// ErrInvalidGeometry reports a geometry or sizing request that cannot be
	// built: zero capacity, an error rate outside (0, 1), a k outside
	// [1, MaxK], or a region of the wrong size or alignment.
	ErrInvalidGeometry = errors.New("counting: invalid geometry")

	// ErrTooLarge reports a filter whose counters would exceed MaxBytes.
	ErrTooLarge = errors.New("counting: filter too large")
)
