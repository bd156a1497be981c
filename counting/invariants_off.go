//go:build !invariants

package counting

// checkHeld checks, in invariants builds, that no change came between Held
// and the Decrement that trusts it.
func checkHeld(*[wordsPerBlock]uint64, *Probe) {}
