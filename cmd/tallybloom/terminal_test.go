//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On a terminal, a long add shows a progress bar with its rate and the time
// left, then the summary.
func TestProgressBarOnATerminal(t *testing.T) {
	t.Parallel()
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
	bar, summary, summarized := strings.Cut(out, "added 1500000 keys")
	assert.True(t, summarized, "then the summary: %q", out[max(0, len(out)-200):])
	// Its steps are bytes read, so a rate of them is no rate of keys.
	assert.NotContains(t, bar, "keys/s", "the bar counts bytes, not keys")
	// The summary's rate is the keys over the time it gives.
	took := regexp.MustCompile(`^ \(\d+ new\) in (\S+), (\d+) keys/s\r?\n`).FindStringSubmatch(summary)
	require.NotNil(t, took, "%q", summary)
	elapsed, err := time.ParseDuration(took[1])
	require.NoError(t, err)
	rate, err := strconv.ParseFloat(took[2], 64)
	require.NoError(t, err)
	assert.InEpsilon(t, 1_500_000, rate*elapsed.Seconds(), 0.01, "%q", summary)

	// From a pipe the size is not known: the bar counts the bytes read
	// and their rate, but cannot say how far it is or how long is left.
	// A filter the keys do not fill, so that no warning shows a share.
	roomy := newFile(t, "--capacity", "2000000", "--error-rate", "0.01")
	cmd = exec.Command(binary, "add", roomy, "--id", "1")
	cmd.Stdin = bytes.NewReader(keys.Bytes())
	out = onTerminal(t, cmd)
	bar, _, summarized = strings.Cut(out, "added 1500000 keys")
	assert.True(t, summarized, "the summary: %q", out[max(0, len(out)-200):])
	assert.Regexp(t, `add.*\d+(\.\d+)? ?[kMG]?B/s`, bar, "the bytes' rate")
	assert.NotContains(t, bar, "%", "no share of an unknown size")
}

// An import's bar counts the export's bytes: toward its size when it is a
// file, and with no share or time left when it comes through a pipe.
func TestImportProgressOnATerminal(t *testing.T) {
	path := newFile(t, "--capacity", "2000000", "--error-rate", "0.01")
	export := filepath.Join(t.TempDir(), "f.export")
	_, errOut, code := tallybloom(t, "export", path, export)
	require.Equal(t, 0, code, errOut)

	dir := t.TempDir()
	out := onTerminal(t, exec.Command(binary, "import", export, filepath.Join(dir, "from-file.tb")))
	assert.Regexp(t, `import +\d+% `, out, "the share of the file read")

	data, err := os.ReadFile(export)
	require.NoError(t, err)
	cmd := exec.Command(binary, "import", "-", filepath.Join(dir, "from-pipe.tb"))
	cmd.Stdin = bytes.NewReader(data)
	out = onTerminal(t, cmd)
	assert.Regexp(t, `import \(\d+(\.\d+)? ?[kMG]?B, `, out, "the bytes read")
	assert.NotContains(t, out, "%", "no share of an unknown size")
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
