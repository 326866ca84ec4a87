package app

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// With redis.wait_replicas 1 a shopper is answered 202 only once the
// replica has the order. While the replica lags, buys answer 503
// unavailable with Retry-After, the order they made on the primary is not
// written to MySQL, and /readyz says why; once the replica is back, the
// shopper's retry with the same request id gets that order, once.
func TestBuyWaitsForTheReplica(t *testing.T) {
	primary := testsvc.StartRedisServer(t)
	host, port, _ := strings.Cut(primary.Addr(), ":")
	replica := testsvc.StartRedisServer(t, "--replicaof", host, port)
	ctx := t.Context()
	inSync := func() bool {
		info := primary.Client().Info(ctx, "replication").Val()
		return strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online")
	}
	testutil.Eventually(t, 10*time.Second, "the replica comes online", inSync)

	s := startSale(t, saleOpts{env: map[string]string{
		"SECKILL_REDIS_ADDRS":         primary.Addr(),
		"SECKILL_REDIS_WAIT_REPLICAS": "1",
		"SECKILL_REDIS_WAIT_TIMEOUT":  "50ms",
	}})
	sku := s.seed(10, 1)
	buy := func(user string) testutil.Reply {
		return s.do(0, "POST", "/api/v1/orders", user, map[string]any{"sku_id": sku, "qty": 1, "request_id": "r-" + user})
	}
	first := buy("alice")
	require.Equal(t, http.StatusAccepted, first.Status, first.Raw)
	s.waitStatus("alice", first.Str("order_id"), "pending_payment")

	// The replica stops following: the primary still takes the buy, but
	// nobody is told so.
	require.NoError(t, replica.Client().Do(ctx, "REPLICAOF", "127.0.0.1", "1").Err())
	testutil.Eventually(t, 10*time.Second, "the primary sees the replica gone", func() bool {
		return strings.Contains(primary.Client().Info(ctx, "replication").Val(), "connected_slaves:0")
	})
	r := buy("bob")
	require.Equal(t, http.StatusServiceUnavailable, r.Status, r.Raw)
	assert.Equal(t, "unavailable", r.Str("error"), r.Raw)
	assert.NotEmpty(t, r.Header.Get("Retry-After"), r.Raw)
	ready := s.do(0, "GET", "/readyz", "", nil)
	assert.Contains(t, ready.Raw, "fewer than redis.wait_replicas 1", "readyz says why buys fail")

	time.Sleep(time.Second) // the drain had time to claim bob's order, and must not write it
	rep := s.audit(sku)
	assert.Equal(t, int64(1), rep.Orders, "only the acknowledged order reached MySQL: %+v", rep)
	assert.Equal(t, int64(1), rep.QueuedOrders, "bob's order waits in the queue: %+v", rep)

	require.NoError(t, replica.Client().Do(ctx, "REPLICAOF", host, port).Err())
	testutil.Eventually(t, 10*time.Second, "the replica is back in sync", inSync)
	retry := buy("bob")
	require.Equal(t, http.StatusAccepted, retry.Status, retry.Raw)
	rep = s.drained(sku)
	assert.Equal(t, int64(2), rep.Orders, "%+v", rep)
	assert.Equal(t, int64(8), *rep.RedisLeft, "bob's unit was taken once")
	got := s.waitStatus("bob", retry.Str("order_id"), "pending_payment")
	assert.Equal(t, fmt.Sprint(sku), fmt.Sprint(got.Num("sku_id")))
}
