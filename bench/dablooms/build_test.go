package dablooms

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBuildCompilesTheRequiredRelease(t *testing.T) {
	dir := t.TempDir()
	flags, err := Build("..", dir)
	if errors.Is(err, ErrNoCompiler) {
		t.Skip(err)
	}
	require.NoError(t, err)
	info, err := os.Stat(filepath.Join(dir, "libdablooms.a"))
	require.NoError(t, err)
	require.Positive(t, info.Size())
	require.Contains(t, flags.LDFLAGS, "-L"+dir+" -ldablooms")
	header := filepath.Join(strings.TrimPrefix(flags.CFLAGS, "-I"), "dablooms.h")
	require.FileExists(t, header)
	require.Contains(t, flags.CFLAGS, "github.com/bitly/dablooms@v0.9.1", "the release the bench module requires")
	require.Contains(t, flags.Env(), "CGO_LDFLAGS="+flags.LDFLAGS)
}
