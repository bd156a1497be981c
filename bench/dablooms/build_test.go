package dablooms

import (
	"crypto/sha256"
	"errors"
	"fmt"
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

func TestBuildSharedKeepsOneDirectoryForAnArchive(t *testing.T) {
	cache := t.TempDir()
	flags, err := BuildShared("..", cache)
	if errors.Is(err, ErrNoCompiler) {
		t.Skip(err)
	}
	require.NoError(t, err)
	again, err := BuildShared("..", cache)
	require.NoError(t, err)
	require.Equal(t, flags, again, "the same archive links from the same directory, so go's build cache reuses the bench")

	dir := strings.Fields(strings.TrimPrefix(flags.LDFLAGS, "-L"))[0]
	archive, err := os.ReadFile(filepath.Join(dir, "libdablooms.a"))
	require.NoError(t, err)
	sum := sha256.Sum256(archive)
	require.Equal(t, filepath.Join(cache, fmt.Sprintf("dablooms-%x", sum[:8])), dir, "named by what it holds")
	entries, err := os.ReadDir(cache)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no build directory left behind")
}
