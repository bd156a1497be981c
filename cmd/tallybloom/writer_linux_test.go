package main

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// While one process writes a file, stats names it, and so does the error a
// second writer gets; once it is gone, neither does. (Linux lists who holds
// a lock; elsewhere both stay silent.)
func TestTheWriterIsNamed(t *testing.T) {
	path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	adder := startFeed(t, "add", path)
	adder.write(t, "first\n")
	waitForKey(t, path, "first", "the adder holds the file once it has added a key")
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

	require.Equal(t, 0, adder.end(t))
	out, _, _ = tallybloom(t, "stats", path)
	assert.NotContains(t, out, "writer")
	out, _, _ = tallybloom(t, "stats", "--json", path)
	assert.NotContains(t, out, `"writer"`)
}
