//go:build !invariants

package engine

// checkInvariants is compiled out; build with -tags invariants to check every
// change.
func checkInvariants(*Filter) {}
