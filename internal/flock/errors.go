package flock

import "errors"

// ErrHeld is Lock's error when another open file (in this process or
// another) holds the lock.
var ErrHeld = errors.New("flock: lock held elsewhere")
