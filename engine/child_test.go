//go:build unix

package engine

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Tests that need real processes re-execute the test binary with
// TALLYBLOOM_CHILD naming the role; TestMain runs the role instead of the
// tests. A child reads one command a line on stdin and answers one line on
// stdout.
const childEnv = "TALLYBLOOM_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role, os.Getenv("TALLYBLOOM_FILE")))
	}
	os.Exit(m.Run())
}

func runChild(role, path string) int {
	switch role {
	case "writer":
		return serve(path, nil)
	case "reader":
		return serve(path, &Options{ReadOnly: true})
	case "full-disk":
		return fillDisk(path)
	case "capped":
		return openCapped(path)
	}
	fmt.Fprintln(os.Stderr, "unknown child role", role)
	return 2
}

// serve opens path and runs commands until stdin closes:
//
//	A id k       Add(key(k), id)                     -> ok <memseq>
//	B id k n     AddBatch(key(k)..key(k+n-1), id)    -> ok <memseq>
//	R id k       Remove(key(k), id)                  -> ok <memseq> | notfound <memseq>
//	D id         DropBefore(id)                      -> ok <memseq> <oldest first id>
//	F            Flush                               -> ok <memseq>
//	C k          Contains(key(k))                    -> 1 | 0
//	S            sub-filters                         -> <count> <oldest first id>
func serve(path string, opts *Options) int {
	out := bufio.NewWriter(os.Stdout)
	f, err := Open(path, opts)
	if err != nil {
		fmt.Fprintf(out, "error %v\n", err)
		out.Flush()
		return 1
	}
	fmt.Fprintln(out, "ready")
	out.Flush()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fields := strings.Fields(in.Text())
		arg := func(i int) uint64 { n, _ := strconv.ParseUint(fields[i], 10, 64); return n }
		var err error
		switch fields[0] {
		case "A":
			err = f.Add(key(arg(2)), arg(1))
		case "B":
			keys := keysFrom(arg(2), arg(2)+arg(3))
			ids := make([]uint64, len(keys))
			for i := range ids {
				ids[i] = arg(1)
			}
			err = f.AddBatch(keys, ids)
		case "R":
			if err = f.Remove(key(arg(2)), arg(1)); err == ErrNotFound {
				fmt.Fprintln(out, "notfound", f.Stats().MemSeq)
				out.Flush()
				continue
			}
		case "D":
			_, err = f.DropBefore(arg(1))
			if err == nil {
				fmt.Fprintln(out, "ok", f.Stats().MemSeq, f.Stats().SubFilters[0].FirstID)
				out.Flush()
				continue
			}
		case "F":
			err = f.Flush()
		case "C":
			fmt.Fprintln(out, map[bool]int{false: 0, true: 1}[f.Contains(key(arg(1)))])
			out.Flush()
			continue
		case "S":
			s := f.Stats()
			fmt.Fprintln(out, len(s.SubFilters), s.SubFilters[0].FirstID)
			out.Flush()
			continue
		}
		if err != nil {
			fmt.Fprintf(out, "error %v\n", err)
		} else {
			fmt.Fprintln(out, "ok", f.Stats().MemSeq)
		}
		out.Flush()
	}
	return 0
}

// child is a running child process and its pipes.
type child struct {
	cmd     *exec.Cmd
	in      *bufio.Writer
	replies chan string
}

func startChild(t *testing.T, role, path string, extraEnv ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+role, "TALLYBLOOM_FILE="+path), extraEnv...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &child{cmd: cmd, in: bufio.NewWriter(stdin), replies: make(chan string, 1024)}
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			c.replies <- lines.Text()
		}
		close(c.replies)
	}()
	return c
}

func (c *child) send(format string, args ...any) {
	fmt.Fprintf(c.in, format+"\n", args...)
	c.in.Flush()
}

// ask sends a command and waits for its reply.
func (c *child) ask(t *testing.T, format string, args ...any) string {
	t.Helper()
	c.send(format, args...)
	reply, ok := <-c.replies
	require.True(t, ok, "the child died before answering %q", fmt.Sprintf(format, args...))
	return reply
}

// kill sends SIGKILL. Replies already written stay readable until the
// pipe's end; read them before wait, which closes the pipe.
func (c *child) kill() { _ = c.cmd.Process.Kill() }

func (c *child) wait() { _ = c.cmd.Wait() }

// stop kills the child and discards what it had still to say.
func (c *child) stop() {
	c.kill()
	for range c.replies {
	}
	c.wait()
}
