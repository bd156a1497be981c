//go:build !amd64 || race

package release

import "sync/atomic"

// Store64 stores val at addr, which must be 8-byte aligned, with release
// order: sync/atomic's store, which has at least that order.
func Store64(addr *uint64, val uint64) { atomic.StoreUint64(addr, val) }
