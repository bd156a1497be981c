//go:build !amd64 || race

package counting

import (
	"sync/atomic"

	"github.com/tallybloom/tallybloom/internal/release"
)

// raiseBlock sets the set bits in presence, unless presence is nil, and
// returns the bits it held; then it adds one to every counter of block that
// masks flags (the low bit of each) and that is not saturated. Every word
// is stored with release order, first to last. Saturated counters are left
// alone; the rest are below 15, so the addition cannot carry into a
// neighbour. A word without a flagged counter is neither loaded nor stored:
// a key's counters fall in five or six of a block's eight words, and here
// each store is sync/atomic's.
func raiseBlock(block, masks *[wordsPerBlock]uint64, presence, set *[2]uint64) (was [2]uint64) {
	if presence != nil {
		for i := range presence {
			was[i] = atomic.LoadUint64(&presence[i])
			release.Store64(&presence[i], was[i]|set[i])
		}
	}
	for i, m := range masks {
		if m == 0 {
			continue
		}
		w := atomic.LoadUint64(&block[i])
		release.Store64(&block[i], w+m&^saturatedBits(w))
	}
	return was
}

// lowerBlock subtracts one from every counter of block that masks flags
// and that is not saturated, as raiseBlock stores, skipping the words
// without one. Every flagged counter must be at least 1, so the
// subtraction cannot borrow.
func lowerBlock(block, masks *[wordsPerBlock]uint64) {
	for i, m := range masks {
		if m == 0 {
			continue
		}
		w := atomic.LoadUint64(&block[i])
		release.Store64(&block[i], w-m&^saturatedBits(w))
	}
}

// raiseBlockZeros is raiseBlock without presence bits, which returns the
// counters that masks flags and that were zero before it: the low bit of
// each such counter's nibble, word i's shifted left by i/2 into word i%2,
// so that the two words' bits count them.
func raiseBlockZeros(block, masks *[wordsPerBlock]uint64) (zeros [2]uint64) {
	for i, m := range masks {
		zeros[i%2] |= (m &^ nonZero(atomic.LoadUint64(&block[i]))) << (i / 2)
	}
	raiseBlock(block, masks, nil, nil)
	return zeros
}
