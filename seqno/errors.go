package seqno

import "errors"

var (
	// ErrCorrupt reports a state or undo record that fails its checksum or
	// is out of range.
	ErrCorrupt = errors.New("seqno: corrupt")

	// ErrNoBootID reports that this platform cannot tell one boot from the next.
	ErrNoBootID = errors.New("seqno: boot id not available")
)
