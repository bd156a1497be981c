//go:build unix

package redistest

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBusFree: a cluster node's port is refused when the port busOffset
// above it is taken, or past 65535, where the node would exit at once.
func TestBusFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	require.Greater(t, taken, busOffset, "an ephemeral port")
	assert.False(t, busFree(taken-busOffset), "bus port %d taken", taken)
	assert.False(t, busFree(65535-busOffset+1), "bus port past 65535")

	port, err := freePort(true)
	require.NoError(t, err)
	assert.True(t, busFree(port), "freePort(true) gives a port whose bus port is free")
}
