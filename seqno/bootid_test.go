//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd || windows

package seqno

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On the systems that can tell one boot from the next, the running boot
// has an id, the same at every call: a process that dies and one that
// opens its file after it, on the same boot, must agree on it, or every
// killed writer's file would be taken for a machine crash's.
func TestCurrentBootIDIsKnownAndStable(t *testing.T) {
	id, err := CurrentBootID()
	require.NoError(t, err)
	assert.NotEqual(t, BootID{}, id)
	for range 3 {
		again, err := CurrentBootID()
		require.NoError(t, err)
		assert.Equal(t, id, again)
	}
}
