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

// countersContains is countersContainsGo in assembly, drawing the chunks
// as presenceContains does and testing each counter as it is drawn.
//
//go:noescape
func countersContains(words *[wordsPerBlock]uint64, state uint64, k int) bool

// presenceDraw is presenceSetAt and setMasks in assembly, drawing the
// set as presenceContains does and marking each counter's low bit in masks
// as it is drawn, for the adds and removes that place a key.
//
//go:noescape
func presenceDraw(state uint64, k int, masks *[wordsPerBlock]uint64) (lo, hi uint64)

// hasPOPCNT is whether the assembly may count bits with POPCNT; where it
// may not, it draws every key's counters one at a time, as it does for a
// key whose first chunks took a counter twice.
var hasPOPCNT = cpu.X86.HasPOPCNT
