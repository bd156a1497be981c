//go:build !invariants

package engine

// checkInvariants is compiled out; build with -tags invariants to check every
// change.
func checkInvariants(*Filter) {}

// crashHook is empty and crashPoint does nothing: crash points are compiled
// out of builds without invariant checks.
type crashHook struct{}

func crashPoint(*Filter, crashSite) {}
