package writeback

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLinuxSays(t *testing.T) {
	l, ok := Read()
	require.True(t, ok)
	assert.Positive(t, l.Background)
	assert.Less(t, l.Background, l.Hard)
	assert.Positive(t, l.Expire)
}
