//go:build unix

// Package redistest starts real Redis servers and clusters for tests: on
// free loopback ports, without persistence (a restart is a Redis that lost
// its data), stopped when the test ends, and on Linux and FreeBSD also when
// the test binary is killed before its end. When redis-server is not on the
// PATH, the test fails and says how to install it.
package redistest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Server is a redis-server process of a test.
type Server struct {
	t    testing.TB
	port int
	args []string
	cmd  *exec.Cmd
	tls  *tls.Config // for a TLS-only server
}

func RequireRedisServer(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is not on the PATH: install it (on Debian, apt-get install redis-server); ./scripts/test does so when it is missing")
	}
}

// busOffset is how far above its port a cluster node listens for the
// other nodes.
const busOffset = 10000

// freePort is a loopback port nothing listens on. For a cluster node
// (bus), the port busOffset above it is free too: a node whose bus port is
// taken, or past 65535, exits at once.
func freePort(bus bool) (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		free := !bus || busFree(port)
		l.Close()
		if free {
			return port, nil
		}
	}
	return 0, errors.New("redistest: no free port whose cluster bus port is free too")
}

// busFree reports whether a cluster node on port could listen for its bus.
func busFree(port int) bool {
	if port+busOffset > 65535 {
		return false
	}
	b, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+busOffset))
	if err != nil {
		return false
	}
	b.Close()
	return true
}

// StartServer starts a server with extra redis-server arguments.
func StartServer(t testing.TB, extra ...string) *Server {
	t.Helper()
	RequireRedisServer(t)
	s, err := launch(t.TempDir(), extra)
	require.NoError(t, err)
	s.t = t
	t.Cleanup(s.Kill)
	return s
}

// Launch starts a server outside any one test, for a TestMain, in dir;
// the caller kills it.
func Launch(dir string, extra ...string) (*Server, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, err
	}
	return launch(dir, extra)
}

func launch(dir string, extra []string) (*Server, error) {
	bus := slices.Contains(extra, "--cluster-enabled")
	var err error
	// Another process may take the port between freePort and the server's
	// start: a server that does not answer is started again on another
	// port, in a directory of its own (a cluster node that failed may have
	// written its configuration).
	for attempt := range 3 {
		var port int
		if port, err = freePort(bus); err != nil {
			return nil, err
		}
		at := dir
		if attempt > 0 {
			at = filepath.Join(dir, "retry"+strconv.Itoa(attempt))
			if err := os.Mkdir(at, 0o700); err != nil {
				return nil, err
			}
		}
		s := &Server{port: port}
		s.args = append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", at, "--protected-mode", "no"}, extra...)
		if err = s.start(); err == nil {
			return s, nil
		}
	}
	return nil, err
}

func (s *Server) start() error {
	s.cmd = exec.Command("redis-server", s.args...)
	if err := startTied(s.cmd); err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), TLSConfig: s.tls})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	// Any answer, NOAUTH included, means the server is up.
	for err := c.Ping(context.Background()).Err(); err != nil && !strings.Contains(err.Error(), "NOAUTH"); err = c.Ping(context.Background()).Err() {
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("redis-server on %s did not answer: %w", s.Addr(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s.answersItself(c)
}

// answersItself checks that the server answering on s's port is the
// process s started, not another test's that took the port first (this
// one then exits, unable to listen). A server that refuses INFO (one that
// asks for a password, or has the command renamed) cannot say, and is
// taken on its word.
func (s *Server) answersItself(c *redis.Client) error {
	info, err := c.Info(context.Background(), "server").Result()
	if _, refused := errors.AsType[redis.Error](err); refused {
		return nil
	}
	if err != nil {
		s.Kill()
		return fmt.Errorf("redis-server on %s: %w", s.Addr(), err)
	}
	pid := strconv.Itoa(s.cmd.Process.Pid)
	for line := range strings.Lines(info) {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok && id == pid {
			return nil
		}
	}
	s.Kill()
	return fmt.Errorf("redis-server on %s is another process than the one started (pid %s)", s.Addr(), pid)
}

// StartTLSServer starts a server that speaks TLS only, with a self-signed
// certificate made for the test, and extra redis-server arguments.
func StartTLSServer(t testing.TB, extra ...string) *Server {
	t.Helper()
	RequireRedisServer(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	selfSigned(t, certFile, keyFile)
	port, err := freePort(false)
	require.NoError(t, err)
	s := &Server{t: t, port: port, tls: &tls.Config{InsecureSkipVerify: true}}
	s.args = append([]string{"--port", "0", "--tls-port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-cert-file", certFile, "--tls-auth-clients", "no"}, extra...)
	require.NoError(t, s.start())
	t.Cleanup(s.Kill)
	return s
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t testing.TB, certFile, keyFile string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	template := x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, &template, &template, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() }

// Kill stops the server.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// Restart kills the server and starts it again, empty.
func (s *Server) Restart() {
	s.Kill()
	require.NoError(s.t, s.start())
}

// Pause stops the server's process without ending it; Resume goes on.
func (s *Server) Pause()  { require.NoError(s.t, s.cmd.Process.Signal(syscall.SIGSTOP)) }
func (s *Server) Resume() { require.NoError(s.t, s.cmd.Process.Signal(syscall.SIGCONT)) }

// Cluster is three nodes joined into a Redis Cluster.
type Cluster struct {
	t     testing.TB
	Nodes []*Server
}

// URL is the cluster's URL: the first node, the others as ?addr= parameters.
func (c *Cluster) URL() string {
	return fmt.Sprintf("redis://%s?addr=%s&addr=%s", c.Nodes[0].Addr(), c.Nodes[1].Addr(), c.Nodes[2].Addr())
}

// Restart restarts every node, empty of data but still a cluster.
func (c *Cluster) Restart() {
	for _, n := range c.Nodes {
		n.Restart()
	}
	c.waitOK()
}

// Pause and Resume stop and continue every node.
func (c *Cluster) Pause() {
	for _, n := range c.Nodes {
		n.Pause()
	}
}

func (c *Cluster) Resume() {
	for _, n := range c.Nodes {
		n.Resume()
	}
}

// ClusterClient is a plain go-redis cluster client, for tests that meddle.
func (c *Cluster) ClusterClient() *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.Nodes[0].Addr(), c.Nodes[1].Addr(), c.Nodes[2].Addr()}})
	c.t.Cleanup(func() { cc.Close() })
	return cc
}

// waitOK waits until every node, not only the first, sees the whole
// cluster with every slot served: a node still learning the others answers
// CLUSTERDOWN.
func (c *Cluster) waitOK() {
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range c.Nodes {
		for {
			info, _ := exec.Command("redis-cli", "-p", strconv.Itoa(n.port), "cluster", "info").Output()
			text := string(info)
			if strings.Contains(text, "cluster_state:ok") && strings.Contains(text, "cluster_slots_ok:16384") &&
				strings.Contains(text, fmt.Sprintf("cluster_known_nodes:%d", len(c.Nodes))) {
				break
			}
			require.True(c.t, time.Now().Before(deadline), "cluster did not come up on %s: %s", n.Addr(), info)
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// StartCluster starts three nodes and joins them into a cluster.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	var nodes []*Server
	for range 3 {
		nodes = append(nodes, StartServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"))
	}
	args := []string{"--cluster", "create"}
	for _, n := range nodes {
		args = append(args, n.Addr())
	}
	out, err := exec.Command("redis-cli", append(args, "--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput()
	require.NoError(t, err, string(out))
	c := &Cluster{t: t, Nodes: nodes}
	c.waitOK()
	return c
}

// Client is a plain go-redis client of s, for tests that meddle with Redis.
func Client(t testing.TB, s *Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { c.Close() })
	return c
}
