package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// While one process writes a file, stats names it, and so does the error a
// second writer gets; once it is gone, neither does. (Linux lists who holds
// a lock; elsewhere both stay silent.)
func TestTheWriterIsNamed(t *testing.T) {
	path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	adder := exec.Command(binary, "add", path)
	in, err := adder.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, adder.Start())
	defer adder.Process.Kill()
	_, err = in.Write([]byte("first\n"))
	require.NoError(t, err)
	// The key is added once the adder holds the file.
	require.Eventually(t, func() bool {
		_, _, code := tallybloom(t, "check", "-q", path, "first")
		return code == 0
	}, 10*time.Second, 10*time.Millisecond)
	pid := adder.Process.Pid

	out, errOut, code := tallybloom(t, "stats", path)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, fmt.Sprintf(`\nwriter +process %d, tallybloom\n`, pid), out)
	out, _, _ = tallybloom(t, "stats", "--json", path)
	var stats statsJSON
	require.NoError(t, json.Unmarshal([]byte(out), &stats))
	assert.Equal(t, &writerJSON{PID: pid, Command: "tallybloom"}, stats.Writer)

	_, errOut, code = tallybloom(t, "add", path, "second")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, fmt.Sprintf("file is locked by another writer: %s (process %d, tallybloom, holds it)", path, pid))

	require.NoError(t, in.Close())
	require.NoError(t, adder.Wait())
	out, _, _ = tallybloom(t, "stats", path)
	assert.NotContains(t, out, "writer")
	out, _, _ = tallybloom(t, "stats", "--json", path)
	assert.NotContains(t, out, `"writer"`)
}
