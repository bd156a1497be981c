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

	cmd := exec.Command(binary, "add", path, "--id", "1")
	cmd.Stdin = in
	out := onTerminal(t, cmd)
	assert.Contains(t, out, "add", "the bar is described")
	assert.Contains(t, out, "%", "the bar shows how far it is")
	assert.Regexp(t, `\d+(\.\d+)? ?[kMG]?B/s`, out, "and the rate")
	assert.Regexp(t, `\[\d+s:\d+s\]`, out, "and the time spent and left")
	bar, _, summarized := strings.Cut(out, "added 1500000 keys")
	assert.True(t, summarized, "then the summary: %q", out[max(0, len(out)-200):])
	// Its steps are bytes read, so a rate of them is no rate of keys.
	assert.NotContains(t, bar, "keys/s", "the bar counts bytes, not keys")
}

// The demo's bar counts keys toward a known total.
func TestDemoProgressOnATerminal(t *testing.T) {
	out := onTerminal(t, exec.Command(binary, "demo", t.TempDir()))
	assert.Contains(t, out, "/280000", "the count toward the total")
	assert.Contains(t, out, "keys/s", "the rate")
	assert.Regexp(t, `\[\d+s:\d+s\]`, out, "the time spent and left")
}

// onTerminal runs cmd with its standard error on a pseudo-terminal and
// returns what the terminal showed.
func onTerminal(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	terminal, tty, err := pty.Open()
	require.NoError(t, err)
	defer terminal.Close()
	cmd.Stderr = tty
	require.NoError(t, cmd.Start())
	tty.Close()
	var screen bytes.Buffer
	_, _ = io.Copy(&screen, terminal) // until the command exits and the pty closes
	require.NoError(t, cmd.Wait())
	return screen.String()
}
