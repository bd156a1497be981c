//go:build invariants

package counting

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A change between Held and the Decrement that trusts it is caught in
// invariants builds.
func TestAChangeAfterHeldIsCaught(t *testing.T) {
	f, _ := newTestFilter(t, Geometry{Blocks: 1, K: 3}, true)
	p := probe(f, NewHasher(9).Key(key(0)))
	f.Increment(&p)
	require.True(t, f.Held(&p))
	f.Increment(&p)
	require.Panics(t, func() { f.Decrement(&p) })
}
