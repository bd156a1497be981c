//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// check streams its input: a large input does not make it grow. The peak
// is the child's own (VmHWM), read once the input is written and before
// it ends: the rusage of a child started with vfork counts, as its peak,
// the parent's resident set at the exec too, which other tests running
// beside this one move by tens of megabytes.
func TestCheckStreamsInConstantMemory(t *testing.T) {
	t.Parallel()
	path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	maxRSS := func(lines int) int64 {
		cmd := exec.Command(binary, "check", "-q", path)
		in, err := cmd.StdinPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		defer cmd.Wait()
		defer in.Close()
		line := []byte(strings.Repeat("x", 60) + "\n")
		for range lines {
			_, err := in.Write(line)
			require.NoError(t, err)
		}
		return peakRSS(t, cmd.Process.Pid)
	}
	small, large := maxRSS(10_000), maxRSS(2_000_000)
	t.Logf("max RSS: %d KiB for 600 KB of keys, %d KiB for 120 MB", small, large)
	assert.Less(t, large, small+16<<10, "120 MB of keys cost a few MiB more at most, not the input")
}

// peakRSS is the peak resident set of the running process pid, in KiB.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return kib
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// Given a named pipe or a directory where a filter file belongs, the
// commands say what it is at once: opening the pipe would wait for a writer.
// (check reads an export from a pipe: TestCheckReadsAnExportFromAPipe.)
func TestCommandsSayWhenAFileIsNotOne(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe")
	require.NoError(t, syscall.Mkfifo(pipe, 0o644))
	for path, what := range map[string]string{pipe: "is a named pipe", dir: "is a directory"} {
		commands := [][]string{{"stats", path}, {"verify", path}, {"add", "--id", "1", path, "k"}}
		if path == dir {
			commands = append(commands, []string{"check", path, "k"}) // check reads an export from a pipe
		}
		for _, args := range commands {
			_, errOut, code := tallybloomWithin(t, 10*time.Second, "", args...)
			assert.Equal(t, 2, code, "%v", args)
			assert.Contains(t, errOut, what, "%v", args)
		}
	}
}

// check reads an export, binary or base64, frozen or not, that comes
// through a pipe, as check <(curl …) gives it: a named pipe, or standard
// input as /dev/stdin. A filter file must be given by its path.
func TestCheckReadsAnExportFromAPipe(t *testing.T) {
	path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	_, _, code := tallybloomIn(t, "a\nb\n", "add", "--id", "1", path)
	require.Equal(t, 0, code)
	probes := []string{"a", "b", "zz", "yy"}
	want, _, _ := tallybloom(t, append([]string{"check", path}, probes...)...)
	require.Contains(t, want, "present\tb")
	dir := t.TempDir()
	for _, flags := range [][]string{nil, {"--base64"}, {"--frozen"}, {"--frozen", "--base64"}} {
		exported := filepath.Join(dir, "export")
		_, errOut, code := tallybloom(t, append(append([]string{"export"}, flags...), path, exported)...)
		require.Equal(t, 0, code, errOut)
		content, err := os.ReadFile(exported)
		require.NoError(t, err)

		pipe := filepath.Join(dir, "pipe")
		require.NoError(t, syscall.Mkfifo(pipe, 0o644))
		go func() {
			if w, err := os.OpenFile(pipe, os.O_WRONLY, 0); err == nil {
				w.Write(content)
				w.Close()
			}
		}()
		out, errOut, code := tallybloomWithin(t, 10*time.Second, "", append([]string{"check", pipe}, probes...)...)
		assert.Equal(t, 1, code, errOut)
		assert.Equal(t, want, out, "%v through a named pipe", flags)
		require.NoError(t, os.Remove(pipe))

		out, errOut, code = tallybloomWithin(t, 10*time.Second, string(content), append([]string{"check", "/dev/stdin"}, probes...)...)
		assert.Equal(t, 1, code, errOut)
		assert.Equal(t, want, out, "%v on standard input", flags)
	}

	content, err := os.ReadFile(path)
	require.NoError(t, err)
	_, errOut, code := tallybloomWithin(t, 10*time.Second, string(content), "check", "/dev/stdin", "b")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "is a filter file coming through a pipe")
}
