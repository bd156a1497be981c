//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On a terminal, a long add shows a progress bar with its rate and the time
// left, then the summary.
func TestProgressBarOnATerminal(t *testing.T) {
	path := newFile(t, "--capacity", "100000", "--error-rate", "0.01")
	input := filepath.Join(t.TempDir(), "keys.txt")
	var keys bytes.Buffer
	for i := range 1_500_000 {
		fmt.Fprintf(&keys, "https://example.com/page/%d\n", i)
	}
	require.NoError(t, os.WriteFile(input, keys.Bytes(), 0o644))
	in, err := os.Open(input)
	require.NoError(t, err)
	defer in.Close()

	terminal, tty, err := pty.Open()
	require.NoError(t, err)
	defer terminal.Close()
	cmd := exec.Command(binary, "add", path, "--id", "1")
	cmd.Stdin, cmd.Stderr = in, tty
	require.NoError(t, cmd.Start())
	tty.Close()
	var screen bytes.Buffer
	_, _ = io.Copy(&screen, terminal) // until the command exits and the pty closes
	require.NoError(t, cmd.Wait())

	out := screen.String()
	assert.Contains(t, out, "add", "the bar is described")
	assert.Contains(t, out, "%", "the bar shows how far it is")
	assert.Regexp(t, `\d+(\.\d+)? ?[kMG]?B/s`, out, "and the rate")
	assert.Regexp(t, `\[\d+s:\d+s\]`, out, "and the time spent and left")
	assert.True(t, strings.Contains(out, "added 1500000 keys"), "then the summary: %q", out[max(0, len(out)-200):])
}
