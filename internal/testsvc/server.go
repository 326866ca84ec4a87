package testsvc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testutil"
)

// RedisServer is a redis-server process owned by one test, on a free port and
// its own directory, for tests that stop, kill or restart a node without
// touching the shared servers.
type RedisServer struct {
	t    testing.TB
	bin  string
	conf string // config file given first, for a Sentinel; "" for none
	args []string
	dir  string
	port int

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	started bool
}

// StartRedisServer starts a private redis-server (no persistence), with the
// extra command-line arguments given, and stops it when the test ends. It
// needs the redis-server binary that scripts/test-services.sh installs.
func StartRedisServer(t testing.TB, args ...string) *RedisServer {
	t.Helper()
	return startServer(t, "", args)
}

func startServer(t testing.TB, conf string, args []string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Missing(t, "redis-server binary not found: %v; %s", err, startServicesMsg)
	}
	s := &RedisServer{t: t, bin: bin, conf: conf, args: args, dir: t.TempDir(), port: FreePort(t)}
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// StartSentinel starts a private Redis Sentinel that monitors the primary at
// primary under name with quorum 2, declares it down after 500ms of silence
// and retries a failover after 3s; it is killed when the test ends.
func StartSentinel(t testing.TB, name, primary string) *RedisServer {
	t.Helper()
	host, port, ok := strings.Cut(primary, ":")
	if !ok {
		t.Fatalf("primary address %q", primary)
	}
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	text := fmt.Sprintf("sentinel monitor %s %s %s 2\n"+
		"sentinel down-after-milliseconds %[1]s 500\n"+
		"sentinel failover-timeout %[1]s 3000\n"+
		"sentinel parallel-syncs %[1]s 1\n", name, host, port)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return startServer(t, conf, []string{"--sentinel"})
}

// Addr is the server's host:port.
func (s *RedisServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Start (re)starts the server on its port and waits until it answers. On
// the first start a port another process took meanwhile is replaced by a
// new free one; a restart keeps the address.
func (s *RedisServer) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	for attempt := 0; ; attempt++ {
		err := s.startOnce()
		if err == nil {
			return
		}
		if s.started || attempt == 5 {
			s.t.Fatalf("redis-server on %s: %v", s.Addr(), err)
		}
		s.port = FreePort(s.t)
	}
}

// startOnce starts the process and waits until the server on the port is
// this process (another test binary may have taken the port).
func (s *RedisServer) startOnce() error {
	var args []string
	if s.conf != "" {
		args = append(args, s.conf)
	}
	args = append(append(args, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--logfile", filepath.Join(s.dir, "redis.log")), s.args...)
	cmd := exec.Command(s.bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer func() { _ = c.Close() }()
	want := "process_id:" + strconv.Itoa(cmd.Process.Pid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		info, err := c.Info(ctx, "server").Result()
		cancel()
		if err == nil && strings.Contains(info, want) {
			s.cmd, s.exited, s.started = cmd, exited, true
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited at start (port in use?)")
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("did not answer: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops the server at once with SIGKILL (a crash: nothing is kept).
func (s *RedisServer) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Kill)
	<-s.exited
	s.cmd = nil
}

// StartRedisClusterNode starts a private redis-server in cluster mode that
// serves every slot alone: a one-node Redis Cluster.
func StartRedisClusterNode(t testing.TB) *RedisServer {
	t.Helper()
	s := StartRedisServer(t, "--cluster-enabled", "yes")
	c := s.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatalf("%s: cluster addslotsrange: %v", s, err)
	}
	for {
		info, err := c.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return s
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: cluster state not ok: %v %q", s, err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Freeze stops the server with SIGSTOP: it keeps its connections and the
// kernel still accepts commands for it, but nothing is answered until Thaw
// (a stall, like a long fork or a swapped-out process).
func (s *RedisServer) Freeze() { s.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen server with SIGCONT; it then runs the commands that
// arrived meanwhile.
func (s *RedisServer) Thaw() { s.signal(syscall.SIGCONT) }

func (s *RedisServer) signal(sig syscall.Signal) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.t.Fatalf("%s: not running", s)
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("%s: %v: %v", s, sig, err)
	}
}

// Client returns a client for the server, closed when the test ends.
func (s *RedisServer) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	return testutil.FreePort(t)
}

// String describes the server for logs.
func (s *RedisServer) String() string { return fmt.Sprintf("redis-server(%s)", s.Addr()) }
