package testsvc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	process
	bin  string
	conf string // config file given first, for a Sentinel; "" for none
	args []string
	dir  string
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
	s := &RedisServer{bin: bin, conf: conf, args: args, dir: t.TempDir()}
	s.process = process{t: t, port: FreePort(t), command: s.command, ready: s.ready, log: filepath.Join(s.dir, "redis.log")}
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

// command is redis-server's command line on port: no persistence, the
// configuration file first when there is one.
func (s *RedisServer) command(port int) *exec.Cmd {
	var args []string
	if s.conf != "" {
		args = append(args, s.conf)
	}
	args = append(append(args, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--logfile", s.log), s.args...)
	return exec.Command(s.bin, args...)
}

// ready checks that the server on the port is the process pid.
func (s *RedisServer) ready(pid int) error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err == nil && !strings.Contains(info, "process_id:"+strconv.Itoa(pid)) {
		err = fmt.Errorf("another server on the port")
	}
	return err
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
