//go:build linux

package main

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// check streams its input: a large input does not make it grow.
func TestCheckStreamsInConstantMemory(t *testing.T) {
	path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	maxRSS := func(lines int) int64 {
		cmd := exec.Command(binary, "check", "-q", path)
		in, err := cmd.StdinPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		line := []byte(strings.Repeat("x", 60) + "\n")
		for range lines {
			_, err := in.Write(line)
			require.NoError(t, err)
		}
		in.Close()
		_ = cmd.Wait()
		return int64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) // KiB
	}
	small, large := maxRSS(10_000), maxRSS(2_000_000)
	t.Logf("max RSS: %d KiB for 600 KB of keys, %d KiB for 120 MB", small, large)
	assert.Less(t, large, small+16<<10, "120 MB of keys cost a few MiB more at most, not the input")
}

// Given a named pipe or a directory where a filter file belongs, the
// commands say what it is at once: opening the pipe would wait for a writer.
func TestCommandsSayWhenAFileIsNotOne(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe")
	require.NoError(t, syscall.Mkfifo(pipe, 0o644))
	for path, what := range map[string]string{pipe: "is a named pipe", dir: "is a directory"} {
		for _, args := range [][]string{{"check", path, "k"}, {"stats", path}, {"verify", path}, {"add", "--id", "1", path, "k"}} {
			code, errOut := runWithin(t, 10*time.Second, args...)
			assert.Equal(t, 2, code, "%v", args)
			assert.Contains(t, errOut, what, "%v", args)
		}
	}
}

// runWithin runs the command and fails the test if it has not ended within
// limit.
func runWithin(t *testing.T, limit time.Duration, args ...string) (code int, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var errOut strings.Builder
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Stderr = &errOut
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "%v still running after %v", args, limit)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), errOut.String()
	}
	require.NoError(t, err)
	return 0, errOut.String()
}
