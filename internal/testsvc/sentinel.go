package testsvc

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The variables that name the Redis Sentinel set: a primary with a replica,
// watched by three Sentinels under one master name.
const (
	EnvRedisSentinel       = "SECKILL_TEST_REDIS_SENTINEL_ADDRS"
	EnvRedisSentinelMaster = "SECKILL_TEST_REDIS_SENTINEL_MASTER"
)

// SentinelAddrs returns the Sentinels' addresses and the master name, for
// tests that build their own client or configuration.
func SentinelAddrs(t testing.TB) ([]string, string) {
	t.Helper()
	var addrs []string
	for _, a := range strings.Split(Env(t, EnvRedisSentinel), ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs, Env(t, EnvRedisSentinelMaster)
}

// Sentinel returns a client that follows the Sentinel set's current primary
// (redis.NewFailoverClient) and a key prefix unique to the test; keys under
// the prefix are deleted from the primary when the test ends.
func Sentinel(t testing.TB) (*redis.Client, string) {
	t.Helper()
	addrs, master := SentinelAddrs(t)
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    master,
		SentinelAddrs: addrs,
		PoolSize:      64,
	})
	ping(t, c, master+" via "+strings.Join(addrs, ","))
	prefix := Prefix(t)
	t.Cleanup(func() {
		_ = deleteKeys(c, prefix)
		_ = c.Close()
	})
	return c, prefix
}

// SentinelReplicas returns a client for every replica of the Sentinel set
// that the Sentinels see up, closed when the test ends. Replicas are read
// only; the test's keys on them go when the primary deletes them.
func SentinelReplicas(t testing.TB) []*redis.Client {
	t.Helper()
	addrs, master := SentinelAddrs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var lastErr error
	for _, addr := range addrs {
		s := redis.NewSentinelClient(&redis.Options{Addr: addr})
		replicas, err := s.Replicas(ctx, master).Result()
		_ = s.Close()
		if err != nil {
			lastErr = err
			continue
		}
		var clients []*redis.Client
		for _, r := range replicas {
			if !replicaUp(r["flags"]) {
				continue
			}
			c := redis.NewClient(&redis.Options{Addr: r["ip"] + ":" + r["port"]})
			t.Cleanup(func() { _ = c.Close() })
			clients = append(clients, c)
		}
		return clients
	}
	Missing(t, "sentinels at %s unreachable: %v; %s", strings.Join(addrs, ","), lastErr, startServicesMsg)
	return nil
}

// replicaUp reports whether a replica's Sentinel flags say it is usable.
func replicaUp(flags string) bool {
	for _, f := range strings.Split(flags, ",") {
		switch f {
		case "s_down", "o_down", "disconnected":
			return false
		}
	}
	return true
}
