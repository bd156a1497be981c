//go:build invariants

package counting

// checkHeld panics if the counters of p's block are no longer what Held
// kept in p: a change came between Held and the Decrement that trusts it.
func checkHeld(words *[wordsPerBlock]uint64, p *Probe) {
	if zero, ones := keyCounters(words, &p.set); zero || ones != p.ones {
		panic("counting: the key's counters changed between Held and Decrement")
	}
}
