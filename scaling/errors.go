package scaling

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidParams reports parameters that cannot shape a chain.
	ErrInvalidParams = errors.New("scaling: invalid parameters")

	// ErrNotFound reports a remove of a key that the routed sub-filter does
	// not hold. Nothing was changed.
	ErrNotFound = errors.New("scaling: key not found")

	// ErrIDRetired reports an id older than every retained sub-filter.
	ErrIDRetired = errors.New("scaling: id older than every retained sub-filter")

	// ErrChainFull reports that MaxSubFilters sub-filters are retained and
	// another is needed; retire old ones with DropBefore.
	ErrChainFull = errors.New("scaling: chain full")
)

func errorf(format string, args ...any) error {
	return fmt.Errorf("%w: directory: "+format, append([]any{ErrInvalidParams}, args...)...)
}
