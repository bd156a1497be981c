//go:build dablooms && cgo

package bench

import (
	"testing"

	"github.com/tallybloom/tallybloom/bench/dablooms"
)

// BenchmarkCgoCall is the cost of a call from Go into C, which each of
// dablooms' adds, lookups and removes pays here.
func BenchmarkCgoCall(b *testing.B) {
	x := 0
	for b.Loop() {
		x = dablooms.Call(x)
	}
}
