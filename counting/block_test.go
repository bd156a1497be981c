package counting

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// raiseBlock and lowerBlock change exactly the flagged counters, each by
// one, leave a saturated counter at 15 and every other counter alone, on
// random blocks crowded with saturated and zero counters: checked nibble by
// nibble, whichever implementation this build has. raiseBlock also sets the
// presence bits it is given and returns those they held; raiseBlockZeros
// changes the block as raiseBlock does and returns the flagged counters
// that were zero.
func TestRaiseAndLowerBlockChangeOnlyFlaggedCounters(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	nibble := func(w uint64, n uint) uint64 { return w >> (4 * n) & MaxCounter }
	for range 2000 {
		var block, masks [wordsPerBlock]uint64
		for i := range block {
			for n := range uint(16) {
				v := rng.Uint64N(MaxCounter + 1)
				switch rng.IntN(4) {
				case 0:
					v = MaxCounter
				case 1:
					v = 0
				}
				block[i] |= v << (4 * n)
				if rng.IntN(3) == 0 {
					masks[i] |= 1 << (4 * n)
				}
			}
		}
		before := block
		presence := [2]uint64{rng.Uint64(), rng.Uint64()}
		set, held := [2]uint64{rng.Uint64(), rng.Uint64()}, presence
		was := raiseBlock(&block, &masks, &presence, &set)
		require.Equal(t, held, was, "the presence bits held before")
		require.Equal(t, [2]uint64{held[0] | set[0], held[1] | set[1]}, presence)
		switch rng.IntN(3) {
		case 0:
			// Without presence bits the block changes as it does with them.
			block = before
			require.Equal(t, [2]uint64{}, raiseBlock(&block, &masks, nil, nil))
		case 1:
			// So it does through raiseBlockZeros, which also returns the
			// flagged counters that were zero: word i's at bit 4n+i/2 of
			// word i%2.
			block = before
			zeros := raiseBlockZeros(&block, &masks)
			var want [2]uint64
			for i := range before {
				for n := range uint(16) {
					if masks[i]>>(4*n)&1 == 1 && nibble(before[i], n) == 0 {
						want[i%2] |= 1 << (4*n + uint(i/2))
					}
				}
			}
			require.Equal(t, want, zeros, "the flagged counters that were zero")
		}
		for i := range block {
			for n := range uint(16) {
				was, now, flagged := nibble(before[i], n), nibble(block[i], n), masks[i]>>(4*n)&1 == 1
				want := was
				if flagged && was < MaxCounter {
					want = was + 1
				}
				equal(t, want, now, "raise: word %d counter %d was %d, flagged %v", i, n, was, flagged)
			}
		}
		// Lowering what was just raised: every flagged counter is now at
		// least 1.
		raised := block
		lowerBlock(&block, &masks)
		for i := range block {
			for n := range uint(16) {
				was, now, flagged := nibble(raised[i], n), nibble(block[i], n), masks[i]>>(4*n)&1 == 1
				want := was
				if flagged && was < MaxCounter {
					want = was - 1
				}
				equal(t, want, now, "lower: word %d counter %d was %d, flagged %v", i, n, was, flagged)
			}
		}
	}
}
