package flock

import "errors"

// ErrHeld is Lock's error when another open file (in this process or
// another) holds the lock.
var ErrHeld = errors.New("flock: lock held elsewhere")

// ErrTaken is Make's error when other processes removed every file it made
// before it could lock it.
var ErrTaken = errors.New("flock: other processes removed the files made beside the name")
