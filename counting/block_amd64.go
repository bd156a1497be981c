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
