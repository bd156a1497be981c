package main

import (
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// While one process writes a file, stats names it, and so does the error a
// second writer gets; once it is gone, neither does. (Linux lists who holds
// a lock; elsewhere both stay silent.)
func TestTheWriterIsNamed(t *testing.T) {
	path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	adder := start(t, "add", path)
	_, err := io.WriteString(adder.in, "first\n")
	require.NoError(t, err)
	eventuallyPresent(t, path, "first") // the adder holds the file
	pid := adder.cmd.Process.Pid

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

	require.NoError(t, adder.in.Close())
	require.Equal(t, 0, adder.exitCode(t))
	out, _, _ = tallybloom(t, "stats", path)
	assert.NotContains(t, out, "writer")
	out, _, _ = tallybloom(t, "stats", "--json", path)
	assert.NotContains(t, out, `"writer"`)
}
