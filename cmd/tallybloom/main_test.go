package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
)

// binary is the tallybloom command built once for the tests, which run it
// as a user would.
var binary string

// childEnv names the role of the test binary run again as a child (see
// runChild) by tests that need a process of the command's own code.
const childEnv = "TALLYBLOOM_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	dir, err := os.MkdirTemp("", "tallybloom-cli")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "tallybloom")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// tallybloom runs the command and returns its output and exit code.
func tallybloom(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return tallybloomIn(t, "", args...)
}

// tallybloomIn runs the command with stdin as its standard input.
func tallybloomIn(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return tallybloomWithin(t, 0, stdin, args...)
}

// tallybloomWithin is tallybloomIn that fails the test if the command has
// not ended within limit (none if 0). Standard input comes through a pipe.
func tallybloomWithin(t *testing.T, limit time.Duration, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx := context.Background()
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "%v still running after %v", args, limit)
	if exit, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errOut.String(), 0
}

func filterFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spam.tb")
	f, err := engine.Create(path, engine.Config{Capacity: 100, ErrorRate: 0.01, Growth: 1}, nil)
	require.NoError(t, err)
	for i := range uint64(300) {
		require.NoError(t, f.Add([]byte{byte(i), byte(i >> 8)}, i))
	}
	require.NoError(t, f.Close())
	return path
}

func TestVerify(t *testing.T) {
	path := filterFile(t)
	out, _, code := tallybloom(t, "verify", path)
	assert.Equal(t, 0, code)
	assert.Equal(t, "ok\t"+path+"\n", out)

	// Clear the first non-zero byte of counters: a lost key.
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	for i := engine.HeaderBytes; i < len(raw); i++ {
		if raw[i] != 0 {
			raw[i] = 0
			break
		}
	}
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	_, errOut, code := tallybloom(t, "verify", path)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "non-zero but its tallies say")
	assert.Contains(t, errOut, "rebuild the filter")
}

func TestErrorsExitTwoWithOneLine(t *testing.T) {
	_, errOut, code := tallybloom(t, "verify", filepath.Join(t.TempDir(), "missing.tb"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no such file")

	notOurs := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(notOurs, []byte("hello, world\n"), 0o644))
	_, errOut, code = tallybloom(t, "verify", notOurs)
	assert.Equal(t, 2, code, "a file that is not a filter is an error")
	assert.Contains(t, errOut, "not a tallybloom filter")

	_, errOut, code = tallybloom(t, "verify")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "Usage:", "bad arguments print the usage")

	_, errOut, code = tallybloom(t, "verify", "--bogus", "x")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "unknown flag")
}
