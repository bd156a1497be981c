package flock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHolderNamesTheProcessHoldingTheLock(t *testing.T) {
	holder, other := twoOpenFiles(t)

	pid, _ := Holder(other)
	assert.Zero(t, pid, "nobody holds the lock yet")

	require.NoError(t, Lock(holder))
	require.ErrorIs(t, Lock(other), ErrHeld)
	comm, err := os.ReadFile("/proc/self/comm")
	require.NoError(t, err)
	pid, name := Holder(other)
	assert.Equal(t, os.Getpid(), pid)
	assert.Equal(t, strings.TrimSpace(string(comm)), name)

	// A lock on another file is not this one's.
	unrelated, err := os.Create(filepath.Join(t.TempDir(), "g"))
	require.NoError(t, err)
	defer unrelated.Close()
	pid, _ = Holder(unrelated)
	assert.Zero(t, pid)

	require.NoError(t, Unlock(holder))
	pid, _ = Holder(other)
	assert.Zero(t, pid, "the lock is gone")
}
