//go:build invariants

package counting

import "sync/atomic"

// hashes counts hashed keys, so tests can check that an operation hashes its
// key once however long the chain.
var hashes atomic.Uint64

func countHash() { hashes.Add(1) }

// HashesComputed is the number of keys hashed so far (invariants builds only).
func HashesComputed() uint64 { return hashes.Load() }
