//go:build unix

package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBusFree: a cluster node's port is refused when the port busOffset
// above it is taken, or past 65535, where the node would exit at once.
func TestBusFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	require.Greater(t, taken, busOffset, "an ephemeral port")
	assert.False(t, busFree(taken-busOffset), "bus port %d taken", taken)
	assert.False(t, busFree(65535-busOffset+1), "bus port past 65535")

	port, err := freePort(true)
	require.NoError(t, err)
	assert.True(t, busFree(port), "freePort(true) gives a port whose bus port is free")
}

// childEnv marks the test binary that TestServerDiesWithItsTestBinary
// starts and kills.
const childEnv = "REDISTEST_CHILD"

// TestServerDiesWithItsTestBinary: a test binary killed before its Cleanup
// runs, as its -timeout does, leaves no redis-server answering on its port.
func TestServerDiesWithItsTestBinary(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "freebsd" {
		t.Skip("no parent-death signal on " + runtime.GOOS)
	}
	if os.Getenv(childEnv) != "" {
		s := StartServer(t)
		fmt.Printf("server %s pid %d\n", s.Addr(), s.cmd.Process.Pid)
		time.Sleep(time.Minute)
		t.Fatal("the child was not killed")
	}
	RequireRedisServer(t)

	child := exec.Command(os.Args[0], "-test.run=^TestServerDiesWithItsTestBinary$", "-test.v")
	// The child is killed before its Cleanup can remove its server's
	// directory: it makes it under one of ours, which ours removes.
	childTemp := t.TempDir()
	child.Env = append(os.Environ(), childEnv+"=1", "TMPDIR="+childTemp)
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })

	var addr string
	var pid int
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if n, _ := fmt.Sscanf(sc.Text(), "server %s pid %d", &addr, &pid); n == 2 {
			break
		}
	}
	require.NotZero(t, pid, "the child says where its server listens")
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // should the test fail

	answers := func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	require.True(t, answers(), "the server answers while its test binary lives")
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	require.Eventually(t, func() bool { return !answers() }, 5*time.Second, 20*time.Millisecond,
		"the server on %s outlived the test binary that started it", addr)
	left, err := os.ReadDir(childTemp)
	require.NoError(t, err)
	require.NotEmpty(t, left, "the killed child's directory lies under the test's own, which the test removes")
}

// TestAServerThatLostItsPortSaysSo: a server started on a port that another
// test's server took first does not pass for it: the tests would share
// one server's data.
func TestAServerThatLostItsPortSaysSo(t *testing.T) {
	first := StartServer(t)
	second := &Server{port: first.port, args: []string{"--port", strconv.Itoa(first.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir()}}
	err := second.start()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "another process than the one started")
	require.NoError(t, first.cmd.Process.Signal(syscall.Signal(0)), "the first server still runs")
}
