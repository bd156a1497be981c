//go:build amd64 && !race

package counting

import "testing"

// Without POPCNT the assembly draws every key's counters one at a time,
// for every k, and must take and answer as the slot stream does there too.
func TestTheAssemblyWithoutPOPCNT(t *testing.T) {
	defer func(had bool) { hasPOPCNT = had }(hasPOPCNT)
	hasPOPCNT = false
	t.Run("lookups", TestLookupsAgreeWithTheSlotStream)
	t.Run("adds", TestKeysTakeTheSlotStreamsCounters)
}
