package dirsync

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, []byte("x"), 0o644))
	assert.NoError(t, Of(path))
	assert.ErrorIs(t, Of(filepath.Join(t.TempDir(), "missing", "f")), fs.ErrNotExist)
}
