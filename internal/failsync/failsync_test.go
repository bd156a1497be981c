//go:build linux

package failsync

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A file's descriptor fails fsync once made to, and works again restored,
// still on the same file.
func TestFailAndRestore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString("before")
	require.NoError(t, err)

	d := Find(t, path)
	assert.Equal(t, int(f.Fd()), d.fd)
	d.Fail()
	assert.ErrorIs(t, f.Sync(), syscall.EINVAL)
	d.Restore()
	require.NoError(t, f.Sync())
	_, err = f.WriteString(", after")
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "before, after", string(got))

	d.Fail() // a second time, on the pipe made for the first
	assert.ErrorIs(t, f.Sync(), syscall.EINVAL)
	d.Restore()
	assert.NoError(t, f.Sync())
}
