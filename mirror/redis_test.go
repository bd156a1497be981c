package mirror

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// server is a redis-server process of a test, on a free loopback port, with
// no persistence: a restart is a Redis that lost its data.
type server struct {
	t    *testing.T
	port int
	args []string
	cmd  *exec.Cmd
}

func requireRedisServer(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is not on the PATH: install it (on Debian, apt-get install redis-server); ./scripts/test does so when it is missing")
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startServer(t *testing.T, extra ...string) *server {
	t.Helper()
	requireRedisServer(t)
	s := &server{t: t, port: freePort(t)}
	s.args = append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--protected-mode", "no"}, extra...)
	s.start()
	t.Cleanup(s.kill)
	return s
}

func (s *server) start() {
	s.cmd = exec.Command("redis-server", s.args...)
	require.NoError(s.t, s.cmd.Start())
	c := redis.NewClient(&redis.Options{Addr: s.addr()})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		require.True(s.t, time.Now().Before(deadline), "redis-server on %s did not answer", s.addr())
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *server) addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }
func (s *server) url() string  { return "redis://" + s.addr() }

func (s *server) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// restart kills the server and starts it again, empty.
func (s *server) restart() {
	s.kill()
	s.start()
}

func (s *server) pause()  { require.NoError(s.t, s.cmd.Process.Signal(syscall.SIGSTOP)) }
func (s *server) resume() { require.NoError(s.t, s.cmd.Process.Signal(syscall.SIGCONT)) }

// startCluster starts three nodes and joins them into a cluster, returning
// its URL.
func startCluster(t *testing.T) string {
	t.Helper()
	var nodes []*server
	for range 3 {
		nodes = append(nodes, startServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"))
	}
	args := []string{"--cluster", "create"}
	for _, n := range nodes {
		args = append(args, n.addr())
	}
	out, err := exec.Command("redis-cli", append(args, "--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput()
	require.NoError(t, err, string(out))
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, _ := exec.Command("redis-cli", "-p", strconv.Itoa(nodes[0].port), "cluster", "info").Output()
		if strings.Contains(string(info), "cluster_state:ok") {
			break
		}
		require.True(t, time.Now().Before(deadline), "cluster did not come up: %s", info)
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Sprintf("redis://%s?addr=%s&addr=%s", nodes[0].addr(), nodes[1].addr(), nodes[2].addr())
}

// rawClient is a plain go-redis client, for tests that meddle with Redis.
func rawClient(t *testing.T, s *server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.addr()})
	t.Cleanup(func() { c.Close() })
	return c
}
