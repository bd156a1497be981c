//go:build linux

package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"

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
