//go:build amd64 && !race

package counting

// raiseBlock sets the set bits in presence, unless presence is nil, and
// returns the bits it held; then it adds one to every counter of block that
// masks flags (the low bit of each) and that is not saturated. Every word
// is stored with release order, first to last. SSE2, which every amd64
// processor has, does two counter words at once (see block_amd64.s).
//
//go:noescape
func raiseBlock(block, masks *[wordsPerBlock]uint64, presence, set *[2]uint64) (was [2]uint64)

// lowerBlock subtracts one from every counter of block that masks flags
// and that is not saturated, as raiseBlock stores. Every flagged counter
// must be at least 1.
//
//go:noescape
func lowerBlock(block, masks *[wordsPerBlock]uint64)

// raiseBlockZeros is raiseBlock without presence bits, which returns the
// counters that masks flags and that were zero before it: the low bit of
// each such counter's nibble, word i's shifted left by i/2 into word i%2,
// so that the two words' bits count them.
//
//go:noescape
func raiseBlockZeros(block, masks *[wordsPerBlock]uint64) (zeros [2]uint64)
