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

	// ErrInvalidOptions: Options that cannot be used (Options.Validate).
	ErrInvalidOptions = errors.New("mirror: invalid options")

	// ErrClosed: a call on a closed Mirror.
	ErrClosed = errors.New("mirror: closed")

	// ErrNameTaken: another process writes copies under the name, a
	// Mirror attached elsewhere or a Push under way. Two writers of one
	// name would replace each other's copies for ever, each a full copy,
	// so the second waits: a Mirror tries again, shown in
	// Stats.LastError, until the holder closes or its claim expires
	// (Options.ClaimTTL after the holder's last call); Push returns the
	// error.
	ErrNameTaken = errors.New("mirror: another process writes copies under this name")
)
