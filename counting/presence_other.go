//go:build !amd64 || race

package counting

// presenceContains is presenceContainsGo, whose loads the race detector
// sees: only amd64 has it in assembly.
func presenceContains(presence *[2]uint64, state uint64, k int) bool {
	return presenceContainsGo(presence, state, k)
}

// countersContains is countersContainsGo, for the same reasons.
func countersContains(words *[wordsPerBlock]uint64, state uint64, k int) bool {
	return countersContainsGo(words, state, k)
}

// presenceDraw is presenceSetAt and setMasks, for the same reasons.
func presenceDraw(state uint64, k int, masks *[wordsPerBlock]uint64) (lo, hi uint64) {
	lo, hi = presenceSetAt(state, k)
	setMasks(masks, [2]uint64{lo, hi})
	return lo, hi
}
