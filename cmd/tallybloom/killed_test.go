//go:build unix

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Real processes beside one another: killed, or writing while another reads.

// An import killed halfway leaves nothing at its path, and the next import
// there succeeds and sweeps away what the killed one left.
func TestKilledImportLeavesNoFile(t *testing.T) {
	exported := filepath.Join(t.TempDir(), "spam.export")
	_, errOut, code := tallybloom(t, "export", filterFile(t), exported)
	require.Equal(t, 0, code, errOut)
	stream, err := os.ReadFile(exported)
	require.NoError(t, err)

	dir := t.TempDir()
	path := filepath.Join(dir, "imported.tb")
	importer := exec.Command(binary, "import", "-", path)
	stdin, err := importer.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, importer.Start())
	_, err = stdin.Write(stream[:len(stream)/2])
	require.NoError(t, err)
	// The importer has read the header and waits for the rest, its file
	// made.
	names := func() []string {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	require.Eventually(t, func() bool { return len(names()) > 0 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, importer.Process.Kill())
	_ = importer.Wait()
	require.NoFileExists(t, path, "killed halfway, the import left nothing at its path")
	require.Len(t, names(), 1)
	assert.True(t, strings.HasPrefix(names()[0], ".imported.tb.creating-"), names())

	_, errOut, code = tallybloomIn(t, string(stream), "import", "-", path)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"imported.tb"}, names(), "the killed import's file is gone")
	_, _, code = tallybloom(t, "verify", path)
	assert.Equal(t, 0, code)
}

// export reads a file another process is writing: each export is a whole
// filter at one sequence (it imports and verifies), or is refused.
func TestExportWhileAnotherProcessAdds(t *testing.T) {
	path := newFile(t, "--capacity", "20000", "--error-rate", "0.01", "--growth", "1")
	adder := exec.Command(binary, "add", "--with-ids", path)
	stdin, err := adder.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, adder.Start())
	// Groups of keys with pauses between them, as a feed arrives.
	fed := feedInBursts(stdin, path, 5000, 60)

	dir := t.TempDir()
	exported, refused := 0, 0
	for i := 0; ; i++ {
		out := filepath.Join(dir, fmt.Sprintf("copy-%d.export", i))
		_, errOut, code := tallybloom(t, "export", path, out)
		if code != 0 {
			require.Contains(t, errOut, "kept changing during the copy", "the only refusal")
			refused++
		} else {
			imported := filepath.Join(dir, fmt.Sprintf("copy-%d.tb", i))
			_, errOut, code = tallybloom(t, "import", out, imported)
			require.Equal(t, 0, code, "export %d imports: %s", i, errOut)
			_, errOut, code = tallybloom(t, "verify", imported)
			require.Equal(t, 0, code, "export %d verifies: %s", i, errOut)
			exported++
		}
		select {
		case err := <-fed:
			require.NoError(t, err)
			require.NoError(t, stdin.Close())
			require.NoError(t, adder.Wait())
			t.Logf("%d exports while another process added 300 000 keys, %d refused", exported, refused)
			require.Positive(t, exported)
			return
		default:
		}
	}
}

// import --replace makes an unclean file again from an export, and only a
// filter file no writer has open.
func TestImportReplacesAnUncleanFile(t *testing.T) {
	live, crashed := uncleanFile(t)
	exported := filepath.Join(t.TempDir(), "spam.export")
	_, errOut, code := tallybloom(t, "export", live, exported)
	require.Equal(t, 0, code, errOut)

	_, errOut, code = tallybloom(t, "import", exported, crashed)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "file already exists")
	_, errOut, code = tallybloom(t, "import", exported, crashed, "--replace")
	require.Equal(t, 0, code, errOut)
	out, _, code := tallybloom(t, "check", crashed, "spam.example")
	assert.Equal(t, 0, code)
	assert.Equal(t, "present\tspam.example\n", out)

	// A writer, waiting for more keys once its first is in. Its key is
	// looked for by a reader: a probe that opened the file to write would
	// hold the lock itself for a moment, and a writer starting then would
	// be refused.
	add := start(t, "add", crashed)
	_, err := io.WriteString(add.in, "held.example\n")
	require.NoError(t, err)
	eventuallyPresent(t, crashed, "held.example")
	_, errOut, code = tallybloom(t, "import", exported, crashed, "--replace")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "locked by another writer")
	require.NoError(t, add.in.Close())
	assert.Equal(t, 0, add.exitCode(t), add.errOut.String())

	notes := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("keep me\n"), 0o644))
	_, errOut, code = tallybloom(t, "import", exported, notes, "--replace")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "will not replace "+notes+", which is not a filter file")
	kept, err := os.ReadFile(notes)
	require.NoError(t, err)
	assert.Equal(t, "keep me\n", string(kept))
}
