//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/internal/redistest"
)

// mirror push, check --redis and mirror pull, as a user runs them.
func TestMirrorCommands(t *testing.T) {
	t.Parallel()
	for _, cluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "standalone", true: "cluster"}[cluster], func(t *testing.T) {
			t.Parallel()
			url := ""
			var flags []string
			if cluster {
				url, flags = redistest.StartCluster(t).URL(), []string{"--cluster"}
			} else {
				url = redistest.StartServer(t).URL()
			}
			remote := append([]string{"--redis", url, "--name", "spam"}, flags...)
			path := newFile(t, "--capacity", "200", "--error-rate", "0.01", "--growth", "1")
			lines := make([]string, 500)
			for i := range lines {
				lines[i] = fmt.Sprintf("%d\thttps://spam-%d.example/", i, i)
			}
			_, errOut, code := tallybloomIn(t, strings.Join(lines, "\n"), "add", "--with-ids", "--url", path)
			require.Equal(t, 0, code, errOut)

			out, errOut, code := tallybloom(t, append([]string{"mirror", "push", path}, remote...)...)
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, out, `pushed `+path)

			probes := []string{"spam-1.example", "spam-499.example", "clean.example"}
			local, _, localCode := tallybloom(t, append([]string{"check", path}, probes...)...)
			got, _, gotCode := tallybloom(t, append(append([]string{"check"}, remote...), probes...)...)
			assert.Equal(t, local, got, "the same output as a local check")
			assert.Equal(t, localCode, gotCode)
			assert.Equal(t, 1, gotCode)
			got, _, _ = tallybloomIn(t, "https://www.spam-7.example/x\nhttps://ok.example/\n", append([]string{"check", "--rollup", "--json"}, remote...)...)
			assert.Equal(t, `{"key":"https://www.spam-7.example/x","present":true,"match":"spam-7.example"}`+"\n"+
				`{"key":"https://ok.example/","present":false}`+"\n", got)

			pulled := filepath.Join(t.TempDir(), "pulled.tb")
			out, errOut, code = tallybloom(t, append([]string{"mirror", "pull", pulled}, remote...)...)
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, out, "500 keys in 3 sub-filters")
			assert.Contains(t, out, "of presence bits", "as the filter pushed")
			again, _, _ := tallybloom(t, append([]string{"check", pulled}, probes...)...)
			assert.Equal(t, local, again)
			_, _, code = tallybloom(t, "verify", pulled)
			assert.Equal(t, 0, code)

			lean := filepath.Join(t.TempDir(), "lean.tb")
			out, errOut, code = tallybloom(t, append([]string{"mirror", "pull", lean, "--counters-only"}, remote...)...)
			require.Equal(t, 0, code, errOut)
			assert.NotContains(t, out, "presence bits", "counters only, as asked")
			stats, _, _ := tallybloom(t, "stats", "--json", lean)
			assert.Contains(t, stats, `"counters_only": true`)
			again, _, _ = tallybloom(t, append([]string{"check", lean}, probes...)...)
			assert.Equal(t, local, again)
		})
	}
}

func TestMirrorCommandErrors(t *testing.T) {
	s := redistest.StartServer(t, "--requirepass", "s3cret-pass")
	path := newFile(t, "--capacity", "10", "--error-rate", "0.1")
	good := strings.Replace(s.URL(), "redis://", "redis://:s3cret-pass@", 1)

	_, errOut, code := tallybloom(t, "mirror", "push", path, "--redis", good, "--name", "x")
	require.Equal(t, 0, code, "a password in the URL works: %s", errOut)
	out, _, code := tallybloom(t, "check", "--redis", good, "--name", "x", "a")
	assert.Equal(t, 1, code)
	assert.Equal(t, "absent\ta\n", out)

	bad := strings.Replace(s.URL(), "redis://", "redis://:wrong-pass@", 1)
	out, errOut, code = tallybloom(t, "mirror", "push", path, "--redis", bad, "--name", "x")
	assert.Equal(t, 2, code)
	assert.NotContains(t, out+errOut, "wrong-pass", "credentials never appear")
	out, errOut, code = tallybloom(t, "check", "--redis", good, "--name", "missing", "a")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no copy of the filter")
	assert.NotContains(t, out+errOut, "s3cret-pass")
	out, errOut, code = tallybloom(t, "mirror", "pull", filepath.Join(t.TempDir(), "p.tb"), "--redis", good, "--name", "missing")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no copy of the filter")
	assert.NotContains(t, out+errOut, "s3cret-pass")
	_, errOut, code = tallybloom(t, "check", "--redis", good, "a")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "Usage:")
}

// A Redis with too little memory for the copy is named as the cause, with
// the size of the counters it must make room for.
func TestMirrorPushSaysRedisIsOutOfMemory(t *testing.T) {
	s := redistest.StartServer(t, "--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
	path := newFile(t, "--capacity", "200000", "--error-rate", "0.01")
	_, errOut, code := tallybloom(t, "mirror", "push", path, "--redis", s.URL(), "--name", "big")
	assert.Equal(t, 2, code)
	assert.Regexp(t, `Redis is out of memory: OOM command not allowed .*; the copy needs room for the filter's counters, and twice that while a full copy replaces the live one \(`+regexp.QuoteMeta(path)+` holds 1\.8 MiB of counters\)\n$`, errOut)
}

// TALLYBLOOM_REDIS stands in for --redis, so that a URL holding a password
// need not be on a command line, which every user of the machine can read.
func TestRedisURLFromTheEnvironment(t *testing.T) {
	s := redistest.StartServer(t, "--requirepass", "s3cret-pass")
	path := newFile(t, "--capacity", "10", "--error-rate", "0.1")
	_, errOut, code := tallybloom(t, "add", path, "a")
	require.Equal(t, 0, code, errOut)
	t.Setenv("TALLYBLOOM_REDIS", strings.Replace(s.URL(), "redis://", "redis://:s3cret-pass@", 1))

	out, errOut, code := tallybloom(t, "mirror", "push", path, "--name", "env")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "pushed "+path)
	assert.NotContains(t, out, "s3cret-pass")
	out, errOut, code = tallybloom(t, "check", "--name", "env", "a", "b")
	assert.Equal(t, 1, code, errOut)
	assert.Equal(t, "present\ta\nabsent\tb\n", out)
	out, errOut, code = tallybloom(t, "mirror", "stats", "--name", "env")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "env")
	pulled := filepath.Join(t.TempDir(), "pulled.tb")
	_, errOut, code = tallybloom(t, "mirror", "pull", pulled, "--name", "env")
	require.Equal(t, 0, code, errOut)
	out, _, code = tallybloom(t, "check", pulled, "a")
	assert.Equal(t, 0, code)
	assert.Equal(t, "present\ta\n", out)

	// --redis wins over the environment.
	_, errOut, code = tallybloom(t, "check", "--redis", "redis://127.0.0.1:1", "--name", "env", "a")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "127.0.0.1:1")
	// --redis still needs --name.
	_, errOut, code = tallybloom(t, "check", "--redis", "redis://127.0.0.1:1", path, "a")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--name")

	// With neither, the error names both ways to give the URL.
	t.Setenv("TALLYBLOOM_REDIS", "")
	for _, args := range [][]string{
		{"mirror", "push", path, "--name", "env"},
		{"mirror", "pull", filepath.Join(t.TempDir(), "p.tb"), "--name", "env"},
		{"mirror", "stats", "--name", "env"},
		{"check", "--name", "env", "a"},
	} {
		_, errOut, code = tallybloom(t, args...)
		assert.Equal(t, 2, code, "%v", args)
		assert.Contains(t, errOut, "--redis", "%v", args)
		assert.Contains(t, errOut, "TALLYBLOOM_REDIS", "%v", args)
		assert.Contains(t, errOut, "Usage:", "%v", args)
	}
}

// syncBuffer is a buffer a child process writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// follower is tallybloom mirror push --follow, running as a child process.
type follower struct {
	*exec.Cmd
	out, errOut syncBuffer
}

// startFollower starts mirror push --follow of path into remote, looking
// for changes every 50 ms; it is killed when the test ends.
func startFollower(t *testing.T, path string, remote []string) *follower {
	t.Helper()
	f := &follower{Cmd: exec.Command(binary, append([]string{"mirror", "push", path, "--follow", "--every", "50ms"}, remote...)...)}
	f.Stdout, f.Stderr = &f.out, &f.errOut
	require.NoError(t, f.Start())
	t.Cleanup(func() { _ = f.Process.Kill() })
	return f
}

// pushes counts the copies the follower reported.
func (f *follower) pushes() int { return strings.Count(f.out.String(), "pushed ") }

// mirror push --follow copies the file again when it changes or Redis lost
// the copy, outlives a Redis that goes away, and stops cleanly when
// interrupted.
func TestMirrorPushFollows(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	remote := []string{"--redis", s.URL(), "--name", "follow"}
	follower := startFollower(t, path, remote)
	errOut, pushes := &follower.errOut, follower.pushes
	require.Eventually(t, func() bool { return pushes() == 1 }, 10*time.Second, 20*time.Millisecond, "the first copy: %s", errOut.String())

	_, errs, code := tallybloom(t, "add", path, "--id", "5", "while-following")
	require.Equal(t, 0, code, errs)
	require.Eventually(t, func() bool { return pushes() == 2 }, 10*time.Second, 20*time.Millisecond, "a copy of the change")
	present, _, _ := tallybloom(t, append(append([]string{"check"}, remote...), "while-following")...)
	assert.Equal(t, "present\twhile-following\n", present)

	s.Kill()
	_, errs, code = tallybloom(t, "add", path, "--id", "6", "while-redis-was-away")
	require.Equal(t, 0, code, errs)
	require.Eventually(t, func() bool { return strings.Contains(errOut.String(), "not pushed, trying again in 50ms") }, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, follower.Process.Signal(syscall.Signal(0)), "still following")
	s.Restart() // empty: the next copy fills it
	require.Eventually(t, func() bool { return pushes() == 3 }, 10*time.Second, 20*time.Millisecond, "a copy once Redis is back: %s", errOut.String())
	present, _, _ = tallybloom(t, append(append([]string{"check"}, remote...), "while-following", "while-redis-was-away")...)
	assert.Equal(t, "present\twhile-following\npresent\twhile-redis-was-away\n", present)

	// Redis restarts empty while the file does not change: the copy is
	// written again all the same.
	s.Restart()
	require.Eventually(t, func() bool { return pushes() == 4 }, 10*time.Second, 20*time.Millisecond, "a copy into the emptied Redis: %s", errOut.String())
	present, _, _ = tallybloom(t, append(append([]string{"check"}, remote...), "while-redis-was-away")...)
	assert.Equal(t, "present\twhile-redis-was-away\n", present)
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, 4, pushes(), "no copy while Redis holds the file's sequence")

	assert.NotContains(t, errOut.String(), "pool.go", "the Redis client's own logs are not shown")
	require.NoError(t, follower.Process.Signal(syscall.SIGINT))
	require.NoError(t, follower.Wait(), "an interrupt ends following with exit 0: %s", errOut.String())
}

// mirror push --follow follows the file its path names: a new file renamed
// over the path (the way to replace a filter file) is copied at once, even
// where its sequence is the one Redis holds, and followed from then on.
func TestMirrorPushFollowsAFileRenamedOverIt(t *testing.T) {
	s := redistest.StartServer(t)
	path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	_, errs, code := tallybloom(t, "add", path, "--id", "1", "old")
	require.Equal(t, 0, code, errs)
	remote := []string{"--redis", s.URL(), "--name", "renamed"}
	follower := startFollower(t, path, remote)
	errOut, pushes := &follower.errOut, follower.pushes
	require.Eventually(t, func() bool { return pushes() == 1 }, 10*time.Second, 20*time.Millisecond, "the first copy: %s", errOut.String())

	// A new file at the same sequence as the old: one add each.
	replacement := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	_, errs, code = tallybloom(t, "add", replacement, "--id", "1", "new")
	require.Equal(t, 0, code, errs)
	require.NoError(t, os.Rename(replacement, path))
	require.Eventually(t, func() bool { return pushes() == 2 }, 10*time.Second, 20*time.Millisecond, "a copy of the new file: %s", errOut.String())
	assert.Contains(t, errOut.String(), path+" was replaced: copying the new file")
	answers, _, _ := tallybloom(t, append(append([]string{"check"}, remote...), "old", "new")...)
	assert.Equal(t, "absent\told\npresent\tnew\n", answers)

	// Followed from then on.
	_, errs, code = tallybloom(t, "add", path, "--id", "2", "newer")
	require.Equal(t, 0, code, errs)
	require.Eventually(t, func() bool { return pushes() == 3 }, 10*time.Second, 20*time.Millisecond, "a copy of the new file's change: %s", errOut.String())
	answers, _, _ = tallybloom(t, append(append([]string{"check"}, remote...), "newer")...)
	assert.Equal(t, "present\tnewer\n", answers)
	require.NoError(t, follower.Process.Signal(syscall.SIGINT))
	require.NoError(t, follower.Wait(), errOut.String())
}

// openFollowed opens the file the path names when it is done: a file
// renamed over the path while it opened the one before is opened in turn,
// and a path renamed over at every open is given up on after three, with
// ErrBusy.
func TestOpenFollowedOpensTheFileThePathNames(t *testing.T) {
	path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	var spares []string
	for i := range 4 {
		spare := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
		_, errs, code := tallybloom(t, "add", spare, "--id", "1", fmt.Sprintf("spare-%d", i))
		require.Equal(t, 0, code, errs)
		spares = append(spares, spare)
	}
	// replacing renames the next spare over path once path is open, at
	// each of its first times opens.
	opens := 0
	replacing := func(times int) *engine.Options {
		opens = 0
		return &engine.Options{ReadOnly: true, OpenFile: func(name string, flag int, perm fs.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, perm)
			if name == path && err == nil {
				opens++
				if opens <= times {
					require.NoError(t, os.Rename(spares[0], path))
					spares = spares[1:]
				}
			}
			return f, err
		}}
	}

	f, err := openFollowed(path, replacing(1))
	require.NoError(t, err)
	assert.Equal(t, 2, opens)
	assert.True(t, f.ContainsString("spare-0"), "the file renamed over the path while the first opened")
	require.NoError(t, f.Close())

	_, err = openFollowed(path, replacing(3))
	require.ErrorIs(t, err, engine.ErrBusy)
	assert.ErrorContains(t, err, path+" was replaced each time it was opened")
	assert.Equal(t, 3, opens)
}

// A file renamed over FILE that cannot be opened leaves the follower
// copying the old one, says so once, not every round, and the file is
// tried again until it opens.
func TestMirrorPushSaysOnceThatAReplacementCannotBeOpened(t *testing.T) {
	s := redistest.StartServer(t)
	path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	old := filepath.Join(t.TempDir(), "old.tb") // the old file, by another name
	require.NoError(t, os.Link(path, old))
	remote := []string{"--redis", s.URL(), "--name", "broken"}
	follower := startFollower(t, path, remote)
	errOut, pushes := &follower.errOut, follower.pushes
	require.Eventually(t, func() bool { return pushes() == 1 }, 10*time.Second, 20*time.Millisecond, "the first copy: %s", errOut.String())

	broken := filepath.Join(t.TempDir(), "broken.tb")
	require.NoError(t, os.WriteFile(broken, []byte("not a filter"), 0o644))
	require.NoError(t, os.Rename(broken, path))
	refused := path + " was replaced: the new file cannot be opened, so the old one is still copied"
	require.Eventually(t, func() bool { return strings.Contains(errOut.String(), refused) }, 10*time.Second, 20*time.Millisecond, errOut.String())
	_, errs, code := tallybloom(t, "add", old, "--id", "1", "into-the-old-file")
	require.Equal(t, 0, code, errs)
	require.Eventually(t, func() bool { return pushes() == 2 }, 10*time.Second, 20*time.Millisecond, "the old file's change: %s", errOut.String())
	answers, _, _ := tallybloom(t, append(append([]string{"check"}, remote...), "into-the-old-file")...)
	assert.Equal(t, "present\tinto-the-old-file\n", answers)
	time.Sleep(500 * time.Millisecond) // ten rounds more
	assert.Equal(t, 1, strings.Count(errOut.String(), refused), "said once: %s", errOut.String())

	replacement := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	_, errs, code = tallybloom(t, "add", replacement, "--id", "1", "new")
	require.Equal(t, 0, code, errs)
	require.NoError(t, os.Rename(replacement, path))
	require.Eventually(t, func() bool { return pushes() == 3 }, 10*time.Second, 20*time.Millisecond, "a copy of the new file: %s", errOut.String())
	answers, _, _ = tallybloom(t, append(append([]string{"check"}, remote...), "into-the-old-file", "new")...)
	assert.Equal(t, "absent\tinto-the-old-file\npresent\tnew\n", answers)
	require.NoError(t, follower.Process.Signal(syscall.SIGINT))
	require.NoError(t, follower.Wait(), errOut.String())
}

// mirror push --follow waits longer after each failed copy, up to 30 s,
// rather than fill standard error, and refuses an interval that would spin.
func TestMirrorPushBacksOffWhileRedisIsAway(t *testing.T) {
	t.Parallel()
	path := newFile(t, "--capacity", "100", "--error-rate", "0.01")
	away := []string{"--redis", "redis://127.0.0.1:1", "--name", "away"} // nothing listens there
	for _, every := range []string{"0s", "-1s", "5ms"} {
		_, errOut, code := tallybloomWithin(t, 10*time.Second, "", append([]string{"mirror", "push", path, "--follow", "--every", every}, away...)...)
		assert.Equal(t, 2, code, "--every %s: %s", every, errOut)
		assert.Contains(t, errOut, "--every must be at least 10ms", every)
		assert.Contains(t, errOut, "Usage:", every)
	}

	follower := exec.Command(binary, append([]string{"mirror", "push", path, "--follow", "--every", "10ms"}, away...)...)
	var errOut syncBuffer
	follower.Stderr = &errOut
	require.NoError(t, follower.Start())
	t.Cleanup(func() { _ = follower.Process.Kill() })
	require.Eventually(t, func() bool { return strings.Contains(errOut.String(), "trying again in 80ms") }, 20*time.Second, 20*time.Millisecond, errOut.String())
	require.NoError(t, follower.Process.Signal(syscall.SIGINT))
	require.NoError(t, follower.Wait(), errOut.String())
	var waits []string
	for _, m := range regexp.MustCompile(`not pushed, trying again in (\S+):`).FindAllStringSubmatch(errOut.String(), -1) {
		waits = append(waits, m[1])
	}
	require.GreaterOrEqual(t, len(waits), 4)
	assert.Equal(t, []string{"10ms", "20ms", "40ms", "80ms"}, waits[:4], "each failure waits twice as long as the last")
}

func TestNextRetryDoublesUpToThirtySeconds(t *testing.T) {
	var seconds []float64
	for retry := time.Duration(0); len(seconds) < 8; {
		retry = nextRetry(retry, time.Second)
		seconds = append(seconds, retry.Seconds())
	}
	assert.Equal(t, []float64{1, 2, 4, 8, 16, 30, 30, 30}, seconds)
	assert.Equal(t, time.Minute, nextRetry(time.Minute, time.Minute), "an --every past the cap is kept")
}

// mirror push says the sequence of the copy it made, though another process
// adds keys to the file while it runs.
func TestMirrorPushSaysTheSequenceItCopied(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	path := newFile(t, "--capacity", "100000", "--error-rate", "0.01")
	writer := exec.Command(binary, "add", "--with-ids", path)
	in, err := writer.StdinPipe()
	require.NoError(t, err)
	var writerErr syncBuffer
	writer.Stderr = &writerErr
	require.NoError(t, writer.Start())
	t.Cleanup(func() { _ = writer.Process.Kill() })
	// A reader copies between two of the writer's changes, and a writer
	// that never pauses cannot be copied from outside.
	fed := feedInBursts(in, path, 100, 0)

	c := redistest.Client(t, s)
	ctx := context.Background()
	seen := map[uint64]bool{}
	for range 20 {
		out, errOut, code := tallybloom(t, "mirror", "push", path, "--redis", s.URL(), "--name", "busy")
		require.Equal(t, 0, code, errOut)
		var pushed uint64
		_, err := fmt.Sscanf(out[strings.LastIndex(out, " at sequence "):], " at sequence %d", &pushed)
		require.NoError(t, err, out)
		held, err := c.HGet(ctx, "{busy}:meta", "seq").Uint64()
		require.NoError(t, err)
		assert.Equal(t, held, pushed, "the sequence printed is the one Redis holds")
		seen[pushed] = true
	}
	assert.Greater(t, len(seen), 1, "copies taken while the writer added: %s", writerErr.String())
	require.NoError(t, in.Close())
	assert.Error(t, <-fed, "the writer read until its input closed")
	require.NoError(t, writer.Wait(), writerErr.String())
}

// mirror push refuses a name another process writes copies under, and says
// who holds it; following, it tries again until the name is free.
func TestMirrorPushWaitsForATakenName(t *testing.T) {
	s := redistest.StartServer(t)
	path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
	c := redistest.Client(t, s)
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, "{taken}:owner", "other.example pid 99 0011223344556677", time.Minute).Err())
	// The other writer is in the middle of a copy, its first.
	require.NoError(t, c.HSet(ctx, "{taken}:pending", "gen", "1").Err())
	remote := []string{"--redis", s.URL(), "--name", "taken"}
	_, errOut, code := tallybloom(t, "add", path, "--id", "1", "a", "b", "c")
	require.Equal(t, 0, code, errOut)

	_, errOut, code = tallybloom(t, append([]string{"mirror", "push", path}, remote...)...)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "another writer writes copies under this name: other.example pid 99 holds it")
	assert.Zero(t, c.Exists(ctx, "{taken}:meta").Val())
	out, errOut, code := tallybloom(t, append([]string{"mirror", "stats"}, remote...)...)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `writer +other\.example pid 99 \(its claim lasts (5[0-9]\.[0-9]s|1m0s) unless renewed\)\n`, out, "the minute the claim was set for")
	assert.Regexp(t, `copy +none live`, out)
	assert.Regexp(t, `\npending +a copy of generation 1, not yet live\n`, out)

	follower := startFollower(t, path, remote)
	require.Eventually(t, func() bool { return strings.Contains(follower.errOut.String(), "other.example pid 99 holds it") }, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, c.Del(ctx, "{taken}:owner").Err()) // the other process closes
	require.Eventually(t, func() bool { return follower.pushes() == 1 }, 10*time.Second, 20*time.Millisecond, follower.errOut.String())
	require.NoError(t, follower.Process.Signal(syscall.SIGINT))
	require.NoError(t, follower.Wait())

	out, errOut, code = tallybloom(t, append([]string{"mirror", "stats", "--json"}, remote...)...)
	require.Equal(t, 0, code, errOut)
	var held copyJSON
	require.NoError(t, json.Unmarshal([]byte(out), &held))
	local, _, _ := tallybloom(t, "stats", "--json", path)
	var file statsJSON
	require.NoError(t, json.Unmarshal([]byte(local), &file))
	assert.True(t, held.Live)
	assert.Equal(t, file.MemSeq, held.Seq)
	assert.Equal(t, file.Seed, held.Seed)
	assert.Empty(t, held.Writer, "a push gives the name up")
	assert.Zero(t, held.Pending, "the other writer's copy, left unfinished, gave way to this one")
	assert.Empty(t, held.Reader, "no reader holds the copy")
	// The copy's sub-filters are the file's, but for what Redis does not
	// keep: the error rate each was built for and the estimate of keys.
	want := file.SubFilters
	for i := range want {
		want[i].ErrorRate, want[i].EstimatedKeys = 0, 0
	}
	assert.Equal(t, want, held.SubFilters)
	assert.Equal(t, 0.003, held.SubFilters[0].Fill, "3 keys of 1000")
	// Redis keeps no sub-filter's own error rate, so the table gives none.
	out, _, code = tallybloom(t, append([]string{"mirror", "stats"}, remote...)...)
	require.Equal(t, 0, code)
	assert.Regexp(t, `\n0 +0\.\. +1000 +3 +0% +[0-9.e-]+ +[0-9.]+ KiB\n`, out)
	local, _, _ = tallybloom(t, "stats", path)
	assert.Regexp(t, `\n0 +0\.\. +1000 +3 +0% +[0-9.e-]+ \(built for [0-9.e-]+\) +[0-9.]+ KiB\n`, local)

	// A reader in the middle of a Restore holds the copy.
	require.NoError(t, c.Set(ctx, "{taken}:hold", "reader.example pid 7 8899aabbccddeeff", time.Minute).Err())
	out, errOut, code = tallybloom(t, append([]string{"mirror", "stats"}, remote...)...)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `\nheld +by reader\.example pid 7, reading the whole copy \(its hold lasts (5[0-9]\.[0-9]s|1m0s) unless renewed\): the writer ships no change meanwhile, for its mirror\.Options\.MaxHold at most\n`, out)
	out, _, _ = tallybloom(t, append([]string{"mirror", "stats", "--json"}, remote...)...)
	require.NoError(t, json.Unmarshal([]byte(out), &held))
	assert.Equal(t, "reader.example pid 7", held.Reader)
	assert.Greater(t, held.ReaderForMS, int64(50_000))
	assert.Zero(t, held.ReaderHeldMS, "a hold that does not say when it began")

	// One that says, and one its writer cut.
	now, err := c.Time(ctx).Result()
	require.NoError(t, err)
	began := strconv.FormatInt(now.Add(-12*time.Second).UnixMilli(), 10)
	require.NoError(t, c.Set(ctx, "{taken}:hold", began+" reader.example pid 7 8899aabbccddeeff", time.Minute).Err())
	out, _, _ = tallybloom(t, append([]string{"mirror", "stats"}, remote...)...)
	assert.Regexp(t, `\nheld +by reader\.example pid 7, reading the whole copy for 12(\.[0-9])?s \(its hold lasts`, out)
	require.NoError(t, c.Set(ctx, "{taken}:hold", "!"+began+" reader.example pid 7 8899aabbccddeeff", time.Minute).Err())
	out, _, _ = tallybloom(t, append([]string{"mirror", "stats"}, remote...)...)
	assert.Regexp(t, `\nheld +no longer: the writer cut the hold reader\.example pid 7 took 12(\.[0-9])?s ago \(mirror\.Options\.MaxHold\), and no reader holds the copy for (5[0-9]\.[0-9]s|1m0s)\n`, out)
	out, _, _ = tallybloom(t, append([]string{"mirror", "stats", "--json"}, remote...)...)
	held = copyJSON{}
	require.NoError(t, json.Unmarshal([]byte(out), &held))
	assert.True(t, held.HoldCut)
	assert.GreaterOrEqual(t, held.ReaderHeldMS, int64(12_000))

	_, errOut, code = tallybloom(t, "mirror", "stats", "--redis", s.URL(), "--name", "nothing")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no copy of the filter in Redis")
}

// mirror stats warns of a copy whose chain holds all the sub-filters it
// can, as stats does of the file.
func TestMirrorStatsWarnsOfAFullChain(t *testing.T) {
	s := redistest.StartServer(t)
	remote := []string{"--redis", s.URL(), "--name", "full"}
	_, errOut, code := tallybloom(t, append([]string{"mirror", "push", fullChain(t)}, remote...)...)
	require.Equal(t, 0, code, errOut)
	out, errOut, code := tallybloom(t, append([]string{"mirror", "stats"}, remote...)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "in 64 sub-filters (at most 64)\nwarning     the chain holds all 64 sub-filters it can")
	out, _, _ = tallybloom(t, append([]string{"mirror", "stats", "--json"}, remote...)...)
	var held copyJSON
	require.NoError(t, json.Unmarshal([]byte(out), &held))
	assert.Equal(t, engine.MaxSubFilters, held.MaxSubFilters)
	assert.True(t, held.ChainFull)
	// Each sub-filter holds the one key it is built for: full, not
	// overfilled.
	for _, sub := range held.SubFilters {
		assert.Equal(t, 1.0, sub.Fill, "level %d", sub.Level)
		assert.False(t, sub.Overfilled, "level %d", sub.Level)
	}
}

// mirror stats gives the Redis server's memory, and warns of a maxmemory
// policy that may evict the copy's parts and of too little room left for
// a full copy beside it.
func TestMirrorStatsWarnsOfRedisMemory(t *testing.T) {
	s := redistest.StartServer(t, "--maxmemory", "1gb", "--maxmemory-policy", "allkeys-lru")
	raw := redistest.Client(t, s)
	remote := []string{"--redis", s.URL(), "--name", "big"}
	path := newFile(t, "--capacity", "200000", "--error-rate", "0.01")
	_, errOut, code := tallybloom(t, append([]string{"mirror", "push", path}, remote...)...)
	require.Equal(t, 0, code, errOut)
	out, errOut, code := tallybloom(t, append([]string{"mirror", "stats"}, remote...)...)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `\nredis       [0-9.]+ MiB used of a maxmemory of 1\.0 GiB, policy allkeys-lru\n`, out)
	assert.Contains(t, out, "\nwarning     maxmemory-policy allkeys-lru may evict parts of the copy, which checks then find lost: run Redis with noeviction or a volatile- policy\n")
	assert.NotContains(t, out, "too little for a full copy")

	// 1 MiB left, where the counters take 1.8 MiB.
	ctx := context.Background()
	require.NoError(t, raw.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	out, _, code = tallybloom(t, append([]string{"mirror", "stats", "--json"}, remote...)...)
	require.Equal(t, 0, code)
	var held copyJSON
	require.NoError(t, json.Unmarshal([]byte(out), &held))
	require.NotNil(t, held.Memory)
	assert.Equal(t, "noeviction", held.Memory.Policy)
	assert.Equal(t, uint64(1<<30), held.Memory.Max)
	require.NoError(t, raw.ConfigSet(ctx, "maxmemory", fmt.Sprint(held.Memory.Used+1<<20)).Err())
	out, _, code = tallybloom(t, append([]string{"mirror", "stats"}, remote...)...)
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "may evict")
	assert.Regexp(t, `\nwarning     Redis has (1\.0 MiB|[0-9.]+ KiB) of its maxmemory left, too little for a full copy's 1\.8 MiB of counters beside this one: the next full copy will fail\n`, out)

	// With no maxmemory Redis evicts nothing, whatever its policy, and
	// takes what it is given.
	require.NoError(t, raw.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	require.NoError(t, raw.ConfigSet(ctx, "maxmemory", "0").Err())
	out, _, code = tallybloom(t, append([]string{"mirror", "stats"}, remote...)...)
	require.Equal(t, 0, code)
	assert.Regexp(t, `\nredis       [0-9.]+ MiB used, no maxmemory, policy allkeys-lru\n`, out)
	assert.NotContains(t, out, "warning")
}

// Two mirror push --follow of different files under one name do not take
// turns: the second waits, saying who holds the name, until the first
// stops.
func TestTwoFollowersDoNotTakeTurns(t *testing.T) {
	s := redistest.StartServer(t)
	remote := []string{"--redis", s.URL(), "--name", "followed"}
	follow := func(key string) (*exec.Cmd, *syncBuffer, *syncBuffer) {
		path := newFile(t, "--capacity", "1000", "--error-rate", "0.01")
		_, errOut, code := tallybloom(t, "add", path, "--id", "1", key)
		require.Equal(t, 0, code, errOut)
		cmd := exec.Command(binary, append([]string{"mirror", "push", path, "--follow", "--every", "50ms"}, remote...)...)
		var out, errs syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &errs
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd, &out, &errs
	}
	present := func(key string) string {
		out, _, _ := tallybloom(t, append(append([]string{"check"}, remote...), key)...)
		return out
	}

	first, firstOut, firstErr := follow("first-key")
	require.Eventually(t, func() bool { return strings.Contains(firstOut.String(), "pushed ") }, 10*time.Second, 20*time.Millisecond, firstErr.String())
	second, secondOut, secondErr := follow("second-key")
	require.Eventually(t, func() bool { return strings.Contains(secondErr.String(), " holds it") }, 10*time.Second, 20*time.Millisecond, secondErr.String())
	time.Sleep(300 * time.Millisecond) // six of the followers' rounds
	assert.NotContains(t, secondOut.String(), "pushed ")
	assert.Equal(t, 1, strings.Count(firstOut.String(), "pushed "), "the first never copies again")
	assert.Equal(t, "present\tfirst-key\n", present("first-key"))

	require.NoError(t, first.Process.Signal(syscall.SIGINT))
	require.NoError(t, first.Wait())
	require.Eventually(t, func() bool { return strings.Contains(secondOut.String(), "pushed ") }, 10*time.Second, 20*time.Millisecond, secondErr.String())
	assert.Equal(t, "present\tsecond-key\n", present("second-key"))
	require.NoError(t, second.Process.Signal(syscall.SIGINT))
	require.NoError(t, second.Wait())
}

// After a machine crash, mirror pull --replace makes the unclean file
// again from its copy in Redis, as the error on the unclean file says.
func TestMirrorPullReplacesAnUncleanFile(t *testing.T) {
	live, crashed := uncleanFile(t)
	remote := []string{"--redis", redistest.StartServer(t).URL(), "--name", "spam"}
	_, errOut, code := tallybloom(t, append([]string{"mirror", "push", live}, remote...)...)
	require.Equal(t, 0, code, errOut)

	_, errOut, code = tallybloom(t, "check", crashed, "spam.example")
	require.Equal(t, exitError, code)
	assert.Contains(t, errOut, "tallybloom mirror pull "+crashed+" --replace --redis URL --name NAME")
	_, errOut, code = tallybloom(t, append([]string{"mirror", "pull", crashed}, remote...)...)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "file already exists")
	out, errOut, code := tallybloom(t, append([]string{"mirror", "pull", crashed, "--replace"}, remote...)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "pulled \"spam\" into "+crashed+": 1 key")
	out, _, code = tallybloom(t, "check", crashed, "spam.example")
	assert.Equal(t, 0, code)
	assert.Equal(t, "present\tspam.example\n", out)
	_, _, code = tallybloom(t, "verify", crashed)
	assert.Equal(t, 0, code)
}

// A copy in Redis takes what create says it takes: at least the filter's
// counters, and not much more, measured with MEMORY USAGE on a real
// redis-server.
func TestARedisCopyTakesWhatCreateSaid(t *testing.T) {
	s := redistest.StartServer(t)
	flags := []string{"--capacity", "200000", "--error-rate", "0.01", "--holding", "300000"}
	path := newFile(t, flags...)
	fp, err := engine.FootprintHolding(engine.Config{Capacity: 200000, ErrorRate: 0.01}, 300000)
	require.NoError(t, err)
	out, _, code := tallybloom(t, append([]string{"create", "--dry-run", filepath.Join(t.TempDir(), "planned.tb")}, flags...)...)
	require.Equal(t, 0, code)
	require.Contains(t, out, "holding 300000 keys, a copy in Redis (mirror push) takes at least "+bytesText(fp.CounterBytes)+", its counters")

	var keys strings.Builder
	for id := range 300000 {
		fmt.Fprintf(&keys, "%d\tkey-%d\n", id+1, id)
	}
	_, errOut, code := tallybloomIn(t, keys.String(), "add", "--with-ids", path)
	require.Equal(t, 0, code, errOut)
	_, errOut, code = tallybloom(t, "mirror", "push", path, "--redis", s.URL(), "--name", "sized")
	require.Equal(t, 0, code, errOut)

	c := redistest.Client(t, s)
	ctx := context.Background()
	names, err := c.Keys(ctx, "{sized}:*").Result()
	require.NoError(t, err)
	used := int64(0)
	for _, name := range names {
		n, err := c.MemoryUsage(ctx, name, 0).Result()
		require.NoError(t, err)
		used += n
	}
	t.Logf("%d keys take %d bytes; the counters are %d", len(names), used, fp.CounterBytes)
	assert.GreaterOrEqual(t, used, int64(fp.CounterBytes), "at least the counters")
	assert.LessOrEqual(t, used, int64(fp.CounterBytes)*5/4+64<<10, "and not much more")
}
