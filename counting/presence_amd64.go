//go:build amd64 && !race

package counting

import "golang.org/x/sys/cpu"

// presenceContains is presenceContainsGo in assembly (presence_amd64.s).
// A lookup there executes about a fifth fewer instructions, which lets the
// processor start the next key's cache miss while this one's is
// outstanding (docs/PERFORMANCE.md, Lookups).
//
//go:noescape
func presenceContains(presence *[2]uint64, state uint64, k int) bool

// hasPOPCNT is whether presenceContains may count bits with POPCNT; where
// it may not, it draws every key's counters one at a time, as it does for
// a key whose first chunks took a counter twice.
var hasPOPCNT = cpu.X86.HasPOPCNT
