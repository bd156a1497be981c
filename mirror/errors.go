package mirror

import "errors"

var (
	// ErrNotMirrored: Redis holds no copy of the filter under that name.
	ErrNotMirrored = errors.New("mirror: no copy of the filter in Redis")

	// ErrBadAnswer: Redis answered something the mirror did not write: a
	// wrong type, a missing field, a foreign value under the filter's name.
	ErrBadAnswer = errors.New("mirror: unexpected answer from Redis")

	// ErrInvalidName: a filter name that cannot be a hash tag.
	ErrInvalidName = errors.New("mirror: invalid filter name")

	// ErrClosed: a call on a closed Mirror.
	ErrClosed = errors.New("mirror: closed")
)
