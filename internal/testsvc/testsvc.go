// Package testsvc connects tests to the real services the suite runs against:
// Redis, a 3-master Redis Cluster, independent Redis servers for Redlock and a
// MySQL-compatible server. Addresses come from the SECKILL_TEST_* variables that
// scripts/test-services.sh prints.
//
// Without a variable a test skips with a message saying how to start the
// services; with CI=true a missing variable or an unreachable service fails the
// test instead, so CI never passes by skipping.
//
// Every helper isolates the test: Redis keys live under a prefix unique to the
// test and are deleted when it ends; each SQL database is created for the test
// and dropped afterwards (on TiDB, ServerMySQL may empty one and hand it to
// the next test of the process instead). Runs can repeat on the same
// servers, and other users' data on them is never touched.
package testsvc

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

// The variables that name the services.
const (
	EnvRedis         = "SECKILL_TEST_REDIS_ADDR"
	EnvRedisCluster  = "SECKILL_TEST_REDIS_CLUSTER_ADDRS"
	EnvRedlock       = "SECKILL_TEST_REDLOCK_ADDRS"
	EnvMySQL         = "SECKILL_TEST_MYSQL_DSN"
	startServicesMsg = "run `eval \"$(scripts/test-services.sh --env)\"` or `make test`"
)

// Env returns the value of the variable, or skips the test when it is unset
// (fails it when CI=true).
func Env(t testing.TB, name string) string {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		Missing(t, "%s is not set; %s", name, startServicesMsg)
	}
	return v
}

// Missing skips the test, or fails it when CI=true, with the formatted message.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("required service missing (CI=true): "+format, args...)
	}
	t.Skipf(format, args...)
}

// RandomID returns n random bytes in hex.
func RandomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Prefix returns a key prefix unique to this test, such as "t:3f9a1c2b:".
func Prefix(t testing.TB) string {
	t.Helper()
	return "t:" + RandomID(4) + ":"
}

// Redis returns a client for the standalone Redis server and a key prefix
// unique to the test; keys under the prefix are deleted when the test ends.
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

// Cluster returns a client for the Redis Cluster and a key prefix unique to the
// test; keys under the prefix are deleted from every master when the test ends.
func Cluster(t testing.TB) (*redis.ClusterClient, string) {
	t.Helper()
	addrs := strings.Split(Env(t, EnvRedisCluster), ",")
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 64})
	ping(t, c, strings.Join(addrs, ","))
	prefix := Prefix(t)
	t.Cleanup(func() {
		_ = DeleteKeys(c, prefix)
		_ = c.Close()
	})
	return c, prefix
}

// Universal returns, as a redis.UniversalClient, the standalone client when
// cluster is false and the Cluster client when it is true, with a unique prefix.
func Universal(t testing.TB, cluster bool) (redis.UniversalClient, string) {
	t.Helper()
	if cluster {
		return Cluster(t)
	}
	return Redis(t)
}

// Backends runs f in two subtests, "standalone" and "cluster", telling it
// which Redis deployment the subtest is for.
func Backends(t *testing.T, f func(t *testing.T, cluster bool)) {
	t.Helper()
	t.Run("standalone", func(t *testing.T) { f(t, false) })
	t.Run("cluster", func(t *testing.T) { f(t, true) })
}

// Deployments runs f in two parallel subtests, "standalone" and "cluster":
// one on standalone Redis and one on the 3-master Cluster, each with a key
// prefix of its own.
func Deployments(t *testing.T, f func(t *testing.T, rdb redis.UniversalClient, prefix string)) {
	t.Helper()
	Backends(t, func(t *testing.T, cluster bool) {
		t.Parallel()
		rdb, prefix := Universal(t, cluster)
		f(t, rdb, prefix)
	})
}

// NumSub counts the subscribers of channel on every node behind c, replicas
// included.
func NumSub(t testing.TB, c redis.UniversalClient, channel string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n atomic.Int64
	count := func(ctx context.Context, c *redis.Client) error {
		v, err := c.PubSubNumSub(ctx, channel).Result()
		n.Add(v[channel])
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
	return n.Load()
}

// RedlockClients returns one client per independent Redlock server and a key
// prefix unique to the test, cleaned up on every server at the end.
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
		Missing(t, "redis at %s unreachable: %v; %s", addr, err, startServicesMsg)
	}
}

// DeleteKeys removes every key under prefix, from every master when c is a
// Cluster client. It returns the first error of listing the keys.
func DeleteKeys(c redis.UniversalClient, prefix string) error {
	switch c := c.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(context.Background(), func(_ context.Context, m *redis.Client) error {
			return deleteKeys(m, prefix)
		})
	case *redis.Client:
		return deleteKeys(c, prefix)
	}
	return fmt.Errorf("testsvc: no way to list the keys of a %T", c)
}

// deleteKeys removes every key under prefix with SCAN and UNLINK.
func deleteKeys(c *redis.Client, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			c.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		c.Unlink(ctx, batch...)
	}
	return iter.Err()
}

// MySQL creates a database unique to the test on the server named by
// SECKILL_TEST_MYSQL_DSN, drops it when the test ends, and returns a DSN
// that selects it (with parseTime and multiStatements on).
func MySQL(t testing.TB) string {
	t.Helper()
	dsn, drop, err := Database(Env(t, EnvMySQL))
	if errors.Is(err, errUnreachable) {
		Missing(t, "%v; %s", err, startServicesMsg)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Log(err)
		}
	})
	return dsn
}

var errUnreachable = errors.New("unreachable")

// Database is MySQL for a caller without a testing.TB (a TestMain): it
// creates a database of a unique name on the server of the DSN base and
// returns a DSN that selects it, and drop, which drops it.
func Database(base string) (dsn string, drop func() error, err error) {
	cfg, err := mysql.ParseDSN(base)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", EnvMySQL, err)
	}
	cfg.DBName = ""
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return "", nil, fmt.Errorf("open mysql: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		_ = admin.Close()
		return "", nil, fmt.Errorf("mysql at %s %w: %w", cfg.Addr, errUnreachable, err)
	}
	name := "seckill_test_" + RandomID(6)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		_ = admin.Close()
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	drop = func() error {
		defer func() { _ = admin.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
		return nil
	}
	cfg.DBName = name
	cfg.ParseTime = true
	cfg.MultiStatements = true
	cfg.Loc = time.UTC
	return cfg.FormatDSN(), drop, nil
}

// DSNWithoutDB returns the SECKILL_TEST_MYSQL_DSN with no database selected.
func DSNWithoutDB(t testing.TB) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(Env(t, EnvMySQL))
	if err != nil {
		t.Fatalf("%s: %v", EnvMySQL, err)
	}
	cfg.DBName = ""
	return cfg.FormatDSN()
}

// Describe formats the addresses in use, for test logs.
func Describe() string {
	return fmt.Sprintf("%s=%q %s=%q %s=%q %s=%q",
		EnvRedis, os.Getenv(EnvRedis), EnvRedisCluster, os.Getenv(EnvRedisCluster),
		EnvRedlock, os.Getenv(EnvRedlock), EnvMySQL, os.Getenv(EnvMySQL))
}
