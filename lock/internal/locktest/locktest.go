// Package locktest connects the tests of package lock to real Redis servers
// named by environment variables, so that anyone who imports package lock
// can run its tests with nothing but a Redis server:
//
//	SECKILL_TEST_REDIS_ADDR            standalone Redis, e.g. 127.0.0.1:6379 (required)
//	SECKILL_TEST_REDIS_CLUSTER_ADDRS   Redis Cluster masters, comma-separated (Cluster subtests)
//	SECKILL_TEST_REDLOCK_ADDRS         independent Redis servers, comma-separated (Redlock tests)
//
// Without a variable the tests that need it skip with a message; with
// CI=true they fail instead, so CI never passes by skipping. A server that is
// named but does not answer fails the test. Tests that
// kill a server start a private redis-server (from PATH) of their own. Every
// test uses a key prefix of its own and deletes its keys at the end.
package locktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The variables that name the servers.
const (
	EnvRedis        = "SECKILL_TEST_REDIS_ADDR"
	EnvRedisCluster = "SECKILL_TEST_REDIS_CLUSTER_ADDRS"
	EnvRedlock      = "SECKILL_TEST_REDLOCK_ADDRS"
)

// Env returns the variable's value, or skips the test when it is unset
// (fails it when CI=true).
func Env(t testing.TB, name string) string {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		Missing(t, "%s is not set: give the address of a Redis server, e.g. %s=127.0.0.1:6379", name, name)
	}
	return v
}

// Missing skips the test, or fails it when CI=true.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("required service missing (CI=true): "+format, args...)
	}
	t.Skipf(format, args...)
}

// Prefix returns a key prefix unique to this test, such as "t:3f9a1c2b:".
func Prefix(testing.TB) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "t:" + hex.EncodeToString(b) + ":"
}

// Redis returns a client of the standalone server and a key prefix; the
// keys under it are deleted when the test ends.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	addr := Env(t, EnvRedis)
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
	ping(t, c, addr)
	prefix := Prefix(t)
	t.Cleanup(func() {
		_ = deleteKeys(c, prefix)
		_ = c.Close()
	})
	return c, prefix
}

// Cluster returns a client of the Redis Cluster and a key prefix; the keys
// under it are deleted from every master when the test ends.
func Cluster(t testing.TB) (*redis.ClusterClient, string) {
	t.Helper()
	addrs := strings.Split(Env(t, EnvRedisCluster), ",")
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 64})
	ping(t, c, strings.Join(addrs, ","))
	prefix := Prefix(t)
	t.Cleanup(func() {
		_ = c.ForEachMaster(context.Background(), func(_ context.Context, m *redis.Client) error {
			return deleteKeys(m, prefix)
		})
		_ = c.Close()
	})
	return c, prefix
}

// Universal is Cluster when cluster is true, else Redis.
func Universal(t testing.TB, cluster bool) (redis.UniversalClient, string) {
	t.Helper()
	if cluster {
		return Cluster(t)
	}
	return Redis(t)
}

// Backends runs f in the subtests "standalone" and "cluster".
func Backends(t *testing.T, f func(t *testing.T, cluster bool)) {
	t.Helper()
	t.Run("standalone", func(t *testing.T) { f(t, false) })
	t.Run("cluster", func(t *testing.T) { f(t, true) })
}

// Deployments runs f in two parallel subtests, on standalone Redis and on
// the Cluster, each with a key prefix of its own.
func Deployments(t *testing.T, f func(t *testing.T, rdb redis.UniversalClient, prefix string)) {
	t.Helper()
	Backends(t, func(t *testing.T, cluster bool) {
		t.Parallel()
		rdb, prefix := Universal(t, cluster)
		f(t, rdb, prefix)
	})
}

// RedlockClients returns a client per independent Redlock server and a key
// prefix, cleaned up on every server when the test ends.
func RedlockClients(t testing.TB) ([]*redis.Client, string) {
	t.Helper()
	addrs := strings.Split(Env(t, EnvRedlock), ",")
	prefix := Prefix(t)
	clients := make([]*redis.Client, 0, len(addrs))
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: strings.TrimSpace(addr)})
		ping(t, c, addr)
		clients = append(clients, c)
	}
	t.Cleanup(func() {
		for _, c := range clients {
			_ = deleteKeys(c, prefix)
			_ = c.Close()
		}
	})
	return clients, prefix
}

func ping(t testing.TB, c redis.UniversalClient, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		t.Fatalf("redis at %s unreachable: %v", addr, err)
	}
}

func deleteKeys(c *redis.Client, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
	for iter.Next(ctx) {
		if err := c.Del(ctx, iter.Val()).Err(); err != nil {
			return err
		}
	}
	return iter.Err()
}

// NumSub counts the subscribers of channel on every node behind c.
func NumSub(t testing.TB, c redis.UniversalClient, channel string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var n int64
	count := func(ctx context.Context, c *redis.Client) error {
		v, err := c.PubSubNumSub(ctx, channel).Result()
		mu.Lock()
		n += v[channel]
		mu.Unlock()
		return err
	}
	var err error
	switch cc := c.(type) {
	case *redis.ClusterClient:
		err = cc.ForEachShard(ctx, count)
	case *redis.Client:
		err = count(ctx, cc)
	}
	if err != nil {
		t.Fatalf("PUBSUB NUMSUB %s: %v", channel, err)
	}
	return n
}

// Server is a redis-server process owned by one test, on a port of its
// own and without persistence, for tests that kill and restart a node.
type Server struct {
	t    testing.TB
	bin  string
	port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartServer starts a private redis-server and kills it when the test
// ends. It skips the test when redis-server is not on PATH.
func StartServer(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Missing(t, "redis-server not found on PATH: %v", err)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	for attempt := 0; ; attempt++ {
		s.port = freePort(t)
		err := s.start()
		if err == nil {
			break
		}
		if attempt == 5 {
			t.Fatalf("redis-server: %v", err)
		}
	}
	t.Cleanup(s.Kill)
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Start restarts a killed server on its port, empty.
func (s *Server) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatalf("restart redis-server on %s: %v", s.Addr(), err)
	}
}

func (s *Server) start() error {
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer func() { _ = c.Close() }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		info, err := c.Info(ctx, "server").Result()
		cancel()
		if err == nil && strings.Contains(info, "process_id:"+strconv.Itoa(cmd.Process.Pid)) {
			s.cmd, s.done = cmd, done
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("exited at start (port %d in use?)", s.port)
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("did not answer: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops the server at once with SIGKILL (a crash). Idempotent.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}
