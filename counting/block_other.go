//go:build !amd64 || race

package counting

import (
	"sync/atomic"

	"github.com/tallybloom/tallybloom/internal/release"
)

// raiseBlock adds one to every counter of block that masks flags (the low
// bit of each) and that is not saturated, storing each word back with
// release order, first to last. Saturated counters are left alone; the
// rest are below 15, so the addition cannot carry into a neighbour.
func raiseBlock(block, masks *[wordsPerBlock]uint64) {
	for i, m := range masks {
		w := atomic.LoadUint64(&block[i])
		release.Store64(&block[i], w+m&^saturatedBits(w))
	}
}

// lowerBlock subtracts one from every counter of block that masks flags
// and that is not saturated, as raiseBlock stores. Every flagged counter
// must be at least 1, so the subtraction cannot borrow.
func lowerBlock(block, masks *[wordsPerBlock]uint64) {
	for i, m := range masks {
		w := atomic.LoadUint64(&block[i])
		release.Store64(&block[i], w-m&^saturatedBits(w))
	}
}
