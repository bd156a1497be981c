//go:build unix

package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A command interrupted while it syncs its output, the last step before
// the rename (seconds, for a large export), removes the file beside OUT
// and exits as the signal asks; OUT is as it was.
func TestAnOutputInterruptedWhileItSyncsLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "export")
	require.NoError(t, os.WriteFile(out, []byte("an older export"), 0o644))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=output-sync", "TALLYBLOOM_OUT="+out)
	var errOut strings.Builder
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "syncing\n" {
		_ = cmd.Wait() // stderr is whole, and read, only after Wait
		t.Fatalf("the child said %q (%v), not that it syncs: %s", line, err, errOut.String())
	}

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	var exit *exec.ExitError
	require.True(t, errors.As(cmd.Wait(), &exit), "the child ended by itself: %s", errOut.String())
	assert.Equal(t, 130, exit.ExitCode(), "exit code (-1: killed by the signal): %s", errOut.String())
	assert.Contains(t, errOut.String(), "interrupted: "+out+" left as it was")
	left, err := filepath.Glob(filepath.Join(dir, ".export.writing-*"))
	require.NoError(t, err)
	assert.Empty(t, left, "nothing left beside OUT")
	content, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "an older export", string(content))
}
