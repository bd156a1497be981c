//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/seqno"
)

// started is the command running with its standard input a pipe the test
// writes, its standard output read line by line and its standard error kept.
type started struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string
	errOut *syncBuffer
}

func start(t *testing.T, args ...string) *started {
	t.Helper()
	cmd := exec.Command(binary, args...)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	errOut := &syncBuffer{}
	cmd.Stderr = errOut
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string, 100)
	go func() {
		scanner := bufio.NewScanner(out)
		for scanner.Scan() {
			lines <- scanner.Text()
		}
		close(lines)
	}()
	return &started{cmd, in, lines, errOut}
}

// next is the command's next line of output, which must come within 10 s.
func (s *started) next(t *testing.T) string {
	t.Helper()
	select {
	case l := <-s.lines:
		return l
	case <-time.After(10 * time.Second):
		t.Fatalf("no output within 10 s; standard error: %s", s.errOut.String())
		return ""
	}
}

// exitCode waits for the command to end.
func (s *started) exitCode(t *testing.T) int {
	t.Helper()
	err := s.cmd.Wait()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode()
	}
	require.NoError(t, err)
	return 0
}

// readerStats is the Stats of the filter at path, as a reader opening it now
// finds them.
func readerStats(t *testing.T, path string) engine.Stats {
	t.Helper()
	r, err := engine.Open(path, &engine.Options{ReadOnly: true})
	require.NoError(t, err)
	defer r.Close()
	return r.Stats()
}

// eventuallyPresent waits up to 20 s for every key to be present in the
// filter at path.
func eventuallyPresent(t *testing.T, path string, keys ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, _, code := tallybloom(t, append([]string{"check", "-q", path}, keys...)...)
		return code == 0
	}, 20*time.Second, 20*time.Millisecond, "%v present in %s", keys, path)
}

// Keys fed slowly (tail -f into add, a person typing into check) are acted
// on as they come, not when a group of them fills or the input ends.
func TestKeysFedSlowlyAreActedOnAsTheyCome(t *testing.T) {
	path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	add := start(t, "add", path)
	_, err := io.WriteString(add.in, "slow-1\nslow-2\n")
	require.NoError(t, err)
	eventuallyPresent(t, path, "slow-1", "slow-2") // while add still reads
	require.NoError(t, add.in.Close())
	assert.Equal(t, 0, add.exitCode(t), add.errOut.String())
	assert.Contains(t, add.errOut.String(), "added 2 keys (2 new)")

	check := start(t, "check", path)
	_, err = io.WriteString(check.in, "slow-1\n")
	require.NoError(t, err)
	assert.Equal(t, "present\tslow-1", check.next(t), "answered before the next key comes")
	_, err = io.WriteString(check.in, "never-added\n")
	require.NoError(t, err)
	assert.Equal(t, "absent\tnever-added", check.next(t))
	require.NoError(t, check.in.Close())
	assert.Equal(t, 1, check.exitCode(t))
}

// A feed that stays open is not stopped by a bad line under --keep-going:
// the keys after it are added while the feed still runs.
func TestKeepGoingOnAFeed(t *testing.T) {
	path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	add := start(t, "add", "--url", "-k", path)
	_, err := io.WriteString(add.in, "spam.example/before\nhttp:///\nspam.example/after\n")
	require.NoError(t, err)
	eventuallyPresent(t, path, "spam.example/after") // while add still reads
	require.NoError(t, add.in.Close())
	assert.Equal(t, 2, add.exitCode(t))
	assert.Contains(t, add.errOut.String(), "line 2: urlkey: not a URL with a host")
}

// A check fed for days follows its FILE: a filter renamed over it (as
// import --replace and mirror pull --replace put one there) is checked
// from the next key on, and said so; a file renamed over it that cannot be
// opened leaves the old one checked, is said once, and is tried again.
func TestCheckFollowsAFileRenamedOverIt(t *testing.T) {
	path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	replacement := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	_, errs, code := tallybloom(t, "add", replacement, "--id", "1", "new")
	require.Equal(t, 0, code, errs)
	check := start(t, "check", path)
	answer := func(key string) string {
		t.Helper()
		_, err := io.WriteString(check.in, key+"\n")
		require.NoError(t, err)
		return check.next(t)
	}
	assert.Equal(t, "absent\tnew", answer("new"))
	// said waits for standard error, which comes through a pipe of its
	// own, to have told of something n times.
	said := func(what string, n int) {
		t.Helper()
		require.Eventually(t, func() bool { return strings.Count(check.errOut.String(), what) >= n },
			10*time.Second, 10*time.Millisecond, "%q %d times: %s", what, n, check.errOut.String())
		assert.Equal(t, n, strings.Count(check.errOut.String(), what), check.errOut.String())
	}

	kept := filepath.Join(t.TempDir(), "kept.tb") // the old file, by another name
	require.NoError(t, os.Link(path, kept))
	require.NoError(t, os.Rename(replacement, path))
	assert.Equal(t, "present\tnew", answer("new"))
	said(path+" was replaced: checking the new file", 1)

	// Not a filter: said once, however many keys come, and the file
	// before it still checked.
	notFilter := filepath.Join(t.TempDir(), "not.tb")
	require.NoError(t, os.WriteFile(notFilter, []byte("not a filter"), 0o644))
	require.NoError(t, os.Rename(notFilter, path))
	assert.Equal(t, "present\tnew", answer("new"))
	assert.Equal(t, "present\tnew", answer("new"))
	said(path+" was replaced: the new file cannot be opened, so the old one is still checked", 1)

	// The old file renamed back: it opens, and is checked.
	require.NoError(t, os.Rename(kept, path))
	assert.Equal(t, "absent\tnew", answer("new"))
	said(path+" was replaced: checking the new file", 2)
	require.NoError(t, check.in.Close())
	assert.Equal(t, 1, check.exitCode(t), "a key was absent")
	said(path+" was replaced: the new file cannot be opened", 1)
}

// warnedWhileReading waits for the command's standard error to hold want
// while it still reads, then feeds it more, closes its input and returns
// its standard error once it has ended well.
func (s *started) warnedWhileReading(t *testing.T, want, more string) string {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(s.errOut.String(), want) },
		10*time.Second, 10*time.Millisecond, "%q while the command still reads", want)
	_, err := io.WriteString(s.in, more)
	require.NoError(t, err)
	require.NoError(t, s.in.Close())
	require.Equal(t, 0, s.exitCode(t), s.errOut.String())
	return s.errOut.String()
}

// A feed that never ends hears of a sub-filter overfilled, a chain nearly
// full, and a disk without room for the next sub-filter, when its add
// fills, opens or nears one: not when the feed stops.
func TestAFeedIsWarnedAsItHappens(t *testing.T) {
	path := newFile(t, "--capacity", "1", "--error-rate", "0.01", "--growth", "1")
	var lines strings.Builder
	for id := 1; id < engine.MaxSubFilters-chainWarnRoom; id++ {
		fmt.Fprintf(&lines, "%d\tkey-%d\n", id, id)
	}
	_, errOut, code := tallybloomIn(t, lines.String(), "add", "--with-ids", path)
	require.Equal(t, 0, code, errOut)

	add := start(t, "add", "--with-ids", path)
	_, err := fmt.Fprintf(add.in, "%d\tkey-next\n", engine.MaxSubFilters-chainWarnRoom)
	require.NoError(t, err)
	want := "warning: the chain holds 56 of the 64 sub-filters it can"
	errOut = add.warnedWhileReading(t, want, "")
	assert.Equal(t, 1, strings.Count(errOut, want), "once")

	// A sub-filter filled past its capacity by one id.
	small := newFile(t, "--capacity", "2", "--error-rate", "0.01")
	add = start(t, "add", "--id", "5", small)
	_, err = io.WriteString(add.in, "a\nb\nc\n")
	require.NoError(t, err)
	errOut = add.warnedWhileReading(t, "warning: the sub-filter of ids from 0 holds 3 keys, 150% of the 2 it was built for", "d\n")
	assert.Equal(t, 1, strings.Count(errOut, "warning: the sub-filter of ids from 0"), "once a run")
	assert.Contains(t, errOut, "every key had id 5: give keys growing ids with --with-ids\n")

	dir := t.TempDir()
	free, ok := freeBytes(dir)
	if !ok {
		return
	}
	roomy := filepath.Join(dir, "f.tb")
	_, errOut, code = tallybloom(t, "create", roomy, "--capacity", "10", "--error-rate", "0.01", "--growth", fmt.Sprint(float64(free/5)/10))
	if code != 0 {
		t.Logf("%s free is more room than a sub-filter can take: %s", bytesText(free), errOut)
		return
	}
	add = start(t, "add", "--with-ids", roomy)
	for id := 1; id <= 9; id++ {
		_, err := fmt.Fprintf(add.in, "%d\tkey-%d\n", id, id)
		require.NoError(t, err)
	}
	errOut = add.warnedWhileReading(t, "too little for the next sub-filter's", "10\tkey-10\n")
	assert.Equal(t, 1, strings.Count(errOut, "too little for the next"), "once for a sub-filter")
}

// Without --id, a feed's keys get the second they are added at, so that
// sub-filters follow time as the feed runs, and drop-before --older-than
// can retire them: a full sub-filter gives way to a new one for a key of a
// later second.
func TestAFeedsKeysGetTheSecondTheyAreAdded(t *testing.T) {
	t.Parallel()
	path := newFile(t, "--capacity", "2", "--error-rate", "0.01", "--growth", "1")
	add := start(t, "add", path)
	_, err := io.WriteString(add.in, "first\nsecond\n")
	require.NoError(t, err)
	eventuallyPresent(t, path, "first", "second")
	time.Sleep(1100 * time.Millisecond)
	_, err = io.WriteString(add.in, "third\n")
	require.NoError(t, err)
	eventuallyPresent(t, path, "third")
	require.NoError(t, add.in.Close())
	assert.Equal(t, 0, add.exitCode(t), add.errOut.String())
	assert.NotContains(t, add.errOut.String(), "warning")

	out, _, code := tallybloom(t, "stats", "--json", path)
	require.Equal(t, 0, code)
	var s statsJSON
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.Len(t, s.SubFilters, 2, "the third key, a second later, opened a sub-filter")
	assert.Greater(t, s.SubFilters[1].FirstID, s.SubFilters[0].MaxID)
	assert.InDelta(t, float64(time.Now().Unix()), float64(s.SubFilters[1].MaxID), 10, "ids are Unix seconds")
}

// dedupe on a feed prints each new line before it waits for more input.
func TestDedupeOnAFeed(t *testing.T) {
	path := newFile(t, "--capacity", "1000", "--error-rate", "0.001")
	dedupe := start(t, "dedupe", path)
	for _, step := range []struct{ in, out string }{{"x\nx\n", "x"}, {"x\ny\n", "y"}} {
		_, err := io.WriteString(dedupe.in, step.in)
		require.NoError(t, err)
		assert.Equal(t, step.out, dedupe.next(t), "printed before the next key comes")
	}
	require.NoError(t, dedupe.in.Close())
	assert.Equal(t, 0, dedupe.exitCode(t), dedupe.errOut.String())
	assert.Contains(t, dedupe.errOut.String(), "read 4 keys, 2 new")
}

// add and remove, interrupted, change every key they read before they end,
// say how many, and exit 130 (or 143 for SIGTERM).
func TestAnInterruptedAddKeepsWhatItRead(t *testing.T) {
	t.Run("waiting for input", func(t *testing.T) {
		path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
		add := start(t, "add", path)
		_, err := io.WriteString(add.in, "a\nb\nc\npartial-line-without-its-end")
		require.NoError(t, err)
		eventuallyPresent(t, path, "c")
		require.NoError(t, add.cmd.Process.Signal(syscall.SIGINT))
		assert.Equal(t, 130, add.exitCode(t), add.errOut.String())
		assert.Contains(t, add.errOut.String(), "added 3 keys (3 new)")
		assert.Contains(t, add.errOut.String(), "interrupted")
		stats, _, _ := tallybloom(t, "stats", path)
		assert.Contains(t, stats, "3 added minus removed", "the partial line is not a key")
		_, errOut, code := tallybloom(t, "verify", path)
		assert.Equal(t, 0, code, errOut)

		remove := start(t, "remove", path)
		_, err = io.WriteString(remove.in, "a\n")
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			out, _, _ := tallybloom(t, "stats", path)
			return strings.Contains(out, "2 added minus removed")
		}, 10*time.Second, 50*time.Millisecond)
		require.NoError(t, remove.cmd.Process.Signal(syscall.SIGTERM))
		assert.Equal(t, 143, remove.exitCode(t), remove.errOut.String())
		assert.Contains(t, remove.errOut.String(), "removed 1 key (0 not found)")
	})

	t.Run("in the middle of a long input", func(t *testing.T) {
		path := newFile(t, "--capacity", "1000000", "--error-rate", "0.01")
		add := start(t, "add", path)
		go func() {
			w := bufio.NewWriter(add.in)
			for i := 0; ; i++ {
				if _, err := fmt.Fprintf(w, "key-%d\n", i); err != nil {
					return // the command ended
				}
			}
		}()
		eventuallyPresent(t, path, "key-20000")
		require.NoError(t, add.cmd.Process.Signal(syscall.SIGINT))
		assert.Equal(t, 130, add.exitCode(t), add.errOut.String())
		m := regexp.MustCompile(`added (\d+) keys`).FindStringSubmatch(add.errOut.String())
		require.NotNil(t, m, add.errOut.String())
		added, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		stats, _, _ := tallybloom(t, "stats", path)
		assert.Contains(t, stats, fmt.Sprintf("keys        %d added minus removed", added), "the summary counts what the file holds")
		out, _, _ := tallybloom(t, "check", path, fmt.Sprintf("key-%d", added-1))
		assert.Equal(t, fmt.Sprintf("present\tkey-%d\n", added-1), out, "the last key read is in")
		_, errOut, code := tallybloom(t, "verify", path)
		assert.Equal(t, 0, code, errOut)
	})
}

// An export interrupted before it renames its copy over OUT leaves OUT as
// it was and removes the copy it was writing beside it.
func TestAnInterruptedExportLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	path, out, writing := slowExport(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		export, _ := stoppedExport(t, path, out, writing)
		require.NoError(t, export.cmd.Process.Signal(sig))
		require.NoError(t, export.cmd.Process.Signal(syscall.SIGCONT))
		assert.Equal(t, 128+int(sig), export.exitCode(t), export.errOut.String())
		assert.Contains(t, export.errOut.String(), "interrupted: "+out+" left as it was")
		assert.Empty(t, writing(), "nothing left beside OUT")
		content, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, "an older export", string(content))
	}
}

// An export that fails while it writes (here at the file-size limit, which
// the shell sets before it runs the command) says why, leaves OUT as it was
// and removes the copy it was writing beside it.
func TestAFailedExportLeavesNothingBehind(t *testing.T) {
	path := newFile(t, "--capacity", "200000", "--error-rate", "0.01")
	dir := t.TempDir()
	out := filepath.Join(dir, "export")
	require.NoError(t, os.WriteFile(out, []byte("an older export"), 0o644))

	// 100 blocks of 512 bytes, for sh: a small part of the export.
	cmd := exec.Command("sh", "-c", `ulimit -f 100 && exec "$0" "$@"`, binary, "export", path, out)
	errOut, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, string(errOut))
	assert.Equal(t, 2, exit.ExitCode())
	assert.Regexp(t, `^tallybloom: write .*/\.export\.writing-[A-Z0-9]+: file too large\n$`, string(errOut))
	content, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "an older export", string(content))
	names, err := filepath.Glob(filepath.Join(dir, ".export.writing-*"))
	require.NoError(t, err)
	assert.Empty(t, names, "nothing left beside OUT")
}

// slowExport is a filter whose export takes a while (107 MB of counters),
// an OUT in a directory of its own holding an older export, and the copies
// exports to OUT are writing beside it.
func slowExport(t *testing.T) (path, out string, writing func() []string) {
	path = newFile(t, "--capacity", "20000000", "--error-rate", "0.01", "--fixed")
	dir := t.TempDir()
	out = filepath.Join(dir, "export")
	require.NoError(t, os.WriteFile(out, []byte("an older export"), 0o644))
	writing = func() []string {
		names, err := filepath.Glob(filepath.Join(dir, ".export.writing-*"))
		require.NoError(t, err)
		return names
	}
	return path, out, writing
}

// stoppedExport starts exporting path to out and stops it (SIGSTOP) in the
// middle of the copy, and returns the name of that copy. It waits for the
// copy to hold bytes: the export writes only once the copy is made and
// locked. The wait is long: in a run of the whole suite with the race
// detector, two exports of this size started side by side showed no copy
// with bytes for 10 s, where one alone writes its first bytes within a
// second. An export that ends before it is caught (all of it can take
// under a second, and a test starved of the processor meanwhile misses
// it) must have succeeded; out gets its content back and another export
// starts, five at most.
func stoppedExport(t *testing.T, path, out string, writing func() []string) (*started, string) {
	t.Helper()
	prior, err := os.ReadFile(out)
	require.NoError(t, err)
	for attempt := 1; ; attempt++ {
		export, copy := stopExport(t, path, out, writing)
		if copy != "" {
			return export, copy
		}
		require.Equal(t, 0, export.exitCode(t), "an export that ended before it was caught: %s", export.errOut.String())
		require.Less(t, attempt, 5, "every export ended before it could be stopped in the middle of its copy")
		t.Logf("export %d ended before it could be stopped in the middle of its copy; another starts", attempt)
		require.NoError(t, os.WriteFile(out, prior, 0o644))
	}
}

// stopExport is one try of stoppedExport: the export stopped and the name
// of its copy, or no name if the export ended first.
func stopExport(t *testing.T, path, out string, writing func() []string) (*started, string) {
	t.Helper()
	before := writing()
	export := start(t, "export", "--base64", path, out)
	var copy string
	for deadline := time.Now().Add(time.Minute); copy == ""; time.Sleep(time.Millisecond) {
		for _, name := range writing() {
			if info, err := os.Stat(name); err == nil && info.Size() > 0 && !slices.Contains(before, name) {
				copy = name
			}
		}
		select {
		case _, open := <-export.lines:
			if !open && copy == "" {
				return export, ""
			}
		default:
		}
		if copy == "" && time.Now().After(deadline) {
			t.Fatalf("no copy beside OUT held bytes within a minute: %s", export.errOut.String())
		}
	}
	// Stopped, it is caught in the middle of the copy, or has finished.
	require.NoError(t, export.cmd.Process.Signal(syscall.SIGSTOP))
	if !slices.Contains(writing(), copy) {
		require.NoError(t, export.cmd.Process.Signal(syscall.SIGCONT))
		return export, ""
	}
	return export, copy
}

// An export killed outright leaves its copy beside OUT; the next export to
// OUT removes it, and leaves the copy of an export still running.
func TestAnExportRemovesWhatAKilledOneLeft(t *testing.T) {
	t.Parallel()
	path, out, writing := slowExport(t)
	killed, left := stoppedExport(t, path, out, writing)
	require.NoError(t, killed.cmd.Process.Signal(syscall.SIGKILL))
	assert.Equal(t, -1, killed.exitCode(t), "killed by the signal")
	require.Equal(t, []string{left}, writing(), "SIGKILL leaves the copy")

	running, copy := stoppedExport(t, path, out, writing)
	assert.Equal(t, []string{copy}, writing(), "the next export removed the killed one's copy")

	_, errOut, code := tallybloom(t, "export", path, out)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{copy}, writing(), "the stopped export's copy stays: it holds its lock")
	answer, errOut, _ := tallybloom(t, "check", out, "k")
	assert.Equal(t, "absent\tk\n", answer, "OUT is the new export, which check reads: %s", errOut)

	require.NoError(t, running.cmd.Process.Signal(syscall.SIGCONT))
	assert.Equal(t, 0, running.exitCode(t), running.errOut.String())
	assert.Empty(t, writing(), "the export that was running renamed its copy")
}

// A feed that waits for input is flushed (--flush-when-idle, a second by
// default), so that a machine crash while it waits finds the file clean
// and nothing to rebuild; with --flush-when-idle 0 the same crash finds it
// unclean. The crash is the command killed, and the file then opened as on
// another boot.
func TestAFeedThatWaitsIsFlushed(t *testing.T) {
	t.Parallel()
	afterCrash := &engine.Options{BootID: func() (seqno.BootID, error) { return seqno.BootID{0xee}, nil }}
	for _, idle := range []string{"1s", "0"} {
		t.Run(idle, func(t *testing.T) {
			t.Parallel()
			path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
			args := []string{"add", path}
			if idle != "1s" {
				args = append(args, "--flush-when-idle", idle)
			}
			add := start(t, args...)
			_, err := io.WriteString(add.in, "spam.example\n")
			require.NoError(t, err)
			eventuallyPresent(t, path, "spam.example")
			flushed := func() bool {
				s := readerStats(t, path)
				return s.DiskSeq == s.MemSeq
			}
			if idle == "1s" {
				require.Eventually(t, flushed, 20*time.Second, 20*time.Millisecond)
			} else {
				time.Sleep(2500 * time.Millisecond)
				require.False(t, flushed(), "not flushed while it waits")
			}
			require.NoError(t, add.cmd.Process.Kill())
			_ = add.cmd.Wait()

			f, err := engine.Open(path, afterCrash)
			if idle != "1s" {
				assert.ErrorIs(t, err, engine.ErrUnclean)
				return
			}
			require.NoError(t, err)
			defer f.Close()
			assert.True(t, f.ContainsString("spam.example"))
		})
	}
	_, errOut, code := tallybloom(t, "add", "--flush-when-idle", "-1s", newFile(t, "--capacity", "10", "--error-rate", "0.01"), "k")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "--flush-when-idle -1s is negative")
}

// A flush made while the input waited that failed is warned of once, until
// one succeeds; a later failure is warned of again.
func TestAFailedFlushIsWarnedOf(t *testing.T) {
	var notes []string
	w := &watch{path: "spam.tb", note: func(line string) { notes = append(notes, line) }}
	failed := engine.Stats{FlushError: errors.New("sync spam.tb: input/output error")}
	w.lookAtFlushes(failed)
	w.lookAtFlushes(failed)
	require.Len(t, notes, 1, "once while it keeps failing")
	assert.Equal(t, "warning: flushing spam.tb while the input waited failed: sync spam.tb: input/output error; a machine crash before a flush succeeds leaves it unclean (it is tried again while the input waits, and at the end)", notes[0])
	w.lookAtFlushes(engine.Stats{})
	w.lookAtFlushes(failed)
	assert.Len(t, notes, 2, "again after one succeeded")
}
