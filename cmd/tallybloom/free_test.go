//go:build linux || darwin || freebsd

package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// These systems say how much room a file system has left, so the tests that
// skip where the system does not say run here; a directory that is not
// there has no answer.
func TestFreeBytesWhereTheSystemSays(t *testing.T) {
	free, ok := freeBytes(t.TempDir())
	assert.True(t, ok)
	assert.Positive(t, free)
	_, ok = freeBytes(filepath.Join(t.TempDir(), "gone"))
	assert.False(t, ok)
}
