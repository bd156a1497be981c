package mirror

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrNotMirrored: Redis holds no copy of the filter under that name.
	ErrNotMirrored = errors.New("mirror: no copy of the filter in Redis")

	// ErrBadAnswer: Redis answered something the mirror did not write: a
	// wrong type, a missing field, a foreign value under the filter's name.
	ErrBadAnswer = errors.New("mirror: unexpected answer from Redis")

	// ErrInvalidName: a filter name that cannot be a hash tag.
	ErrInvalidName = errors.New("mirror: invalid filter name")

	// ErrInvalidInput: an argument that cannot be used: a nil Redis or a
	// nil filter.
	ErrInvalidInput = errors.New("mirror: invalid input")

	// ErrInvalidURL: a Redis URL Dial or DialCluster cannot use.
	ErrInvalidURL = errors.New("mirror: invalid Redis URL")

	// ErrInvalidOptions: Options that cannot be used (Options.Validate).
	ErrInvalidOptions = errors.New("mirror: invalid options")

	// ErrClosed: a call on a closed Mirror.
	ErrClosed = errors.New("mirror: closed")

	// ErrNameTaken: another writer writes copies under the name, a
	// Mirror attached elsewhere (or in this process) or a Push under way. Two writers of one
	// name would replace each other's copies for ever, each a full copy,
	// so the second waits: a Mirror tries again, shown in
	// Stats.LastError, until the holder closes or its claim expires
	// (Options.ClaimTTL after the holder's last call); Push returns the
	// error.
	ErrNameTaken = errors.New("mirror: another writer writes copies under this name")

	// ErrPartLost: a part of the copy's counters is gone from Redis:
	// evicted by a Redis whose maxmemory-policy evicts keys that have no
	// expiry (allkeys-lru, say; run it with noeviction or a volatile-
	// policy), or deleted by hand. Checks return it rather than read the
	// part as zeros, which would say keys the filter holds are absent; the
	// writer's mirror, finding it, writes a full copy.
	ErrPartLost = errors.New("mirror: Redis lost a part of the copy")

	// ErrRedisFull: Redis refused a write because its used memory is over
	// its maxmemory and its policy frees nothing (noeviction, as the copy's
	// keys need). A full copy is written beside the live one until it
	// replaces it, so Redis needs room for the filter's counters twice
	// (mirror stats shows them). A Mirror tries again, shown in
	// Stats.LastError, and catches up once there is room; Push returns
	// the error. Checkers read on meanwhile: their script writes nothing.
	ErrRedisFull = errors.New("mirror: Redis is out of memory")

	// ErrCopyChanging: the copy in Redis changed under each of a read's
	// attempts. A check reads the copy in one call, and reads again when
	// another copy became live or the copy's sub-filters changed since it
	// last read them, 11 times at most. Pull and Restore read a copy of
	// more than 8 MiB of counters in many calls, all of one sequence, so
	// they read again after any change that their writer shipped
	// meanwhile, pausing longer each time; from their third read they
	// hold the copy, and its writer queues its changes until they have
	// read it. They give up with this error, after about 1.3 s, only
	// where the hold cannot be had (Redis refuses the write: a replica,
	// one out of memory, a user its ACL lets only read) or is not
	// honoured (a writer built before holds, or a process other than a
	// Mirror or Push changing the copy); and at once when the writer
	// stops waiting for their hold (its Options.MaxHold, a minute by
	// default).
	ErrCopyChanging = errors.New("mirror: the copy kept changing under the read")
)

// redisFull is err as ErrRedisFull where Redis refused it for want of
// memory (an OOM reply, from a command or from a script's call).
func redisFull(err error) error {
	if err != nil && strings.HasPrefix(err.Error(), "OOM ") {
		return fmt.Errorf("%w: %w; the copy needs room for the filter's counters, and twice that while a full copy replaces the live one", ErrRedisFull, err)
	}
	return err
}

// partLost is ErrPartLost naming the part, from a script's TBPART.
func partLost(part string) error {
	return fmt.Errorf("%w: %s is gone (evicted, or deleted)", ErrPartLost, part)
}

// readError is err, from reading the live copy, as ErrPartLost if a part
// the read needed is gone.
func readError(err error) error {
	if part, ok := strings.CutPrefix(scriptError(err), "TBPART "); ok {
		return partLost(part)
	}
	return fmt.Errorf("mirror: reading the copy: %w", err)
}

// errShortPart: a part of the copy holds fewer bytes than the copy says.
// A batch makes a sub-filter's parts one byte long and the writer fills
// them at once (see applyOps), so a read is made again a few times; after
// that, a copy that does not hold what it claims is a bad answer.
var errShortPart = fmt.Errorf("%w: a part of the copy is shorter than the copy says", ErrBadAnswer)

// readAgain reports whether a read of the whole copy (Pull, Restore) is
// made again after err: the copy changed, or a part is not yet filled.
func readAgain(err error) bool {
	return errors.Is(err, ErrCopyChanging) && !errors.Is(err, errHoldCut) || errors.Is(err, errShortPart)
}

// errHoldCut: the writer stopped waiting for the reader's hold on its
// copy (Options.MaxHold) and ships again, so a read that needed the hold
// is not made again.
var errHoldCut = errors.New("its writer stopped waiting for this reader's hold")

// copyChanged is the error of a read that found the copy not the one whose
// meta hash it read (readScript's TBGEN, TBSEQ or TBDIR), or nil.
func copyChanged(err error) error {
	var why string
	code, _, _ := strings.Cut(scriptError(err), " ")
	switch code {
	case "TBGEN":
		why = "another copy became live"
	case "TBSEQ":
		why = "its writer shipped changes"
	case "TBDIR":
		why = "its sub-filters changed"
	default:
		return nil
	}
	return fmt.Errorf("%w: %s", ErrCopyChanging, why)
}

// gaveUp is err, the last attempt's, of a read that gives up after
// attempts of them; if each found the copy changed, it says how many.
func gaveUp(err error, attempts int) error {
	if !errors.Is(err, ErrCopyChanging) {
		return err
	}
	return fmt.Errorf("%w (each of %d reads)", err, attempts)
}
