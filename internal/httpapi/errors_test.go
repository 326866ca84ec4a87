package httpapi

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/testsvc"
)

func TestErrorTable(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("x: %w", stock.ErrSoldOut), http.StatusConflict, "sold_out"},
		{fmt.Errorf("x: %w", stock.ErrBusy), http.StatusServiceUnavailable, "busy"},
		{fmt.Errorf("x: %w", catalog.ErrNotFound), http.StatusNotFound, "unknown_sku"},
		{fmt.Errorf("x: %w", order.ErrQueued), http.StatusConflict, "order_queued"},
		{(&catalog.SKU{ID: 7, Buckets: 4}).CheckBuckets(8), http.StatusConflict, "buckets_fixed"},
		{fmt.Errorf("redis: %w", context.Canceled), http.StatusServiceUnavailable, "canceled"},
		{fmt.Errorf("redis: %w", context.DeadlineExceeded), http.StatusServiceUnavailable, "unavailable"},
		{errors.New("boom at 10.0.0.1:3306"), http.StatusInternalServerError, "internal"},
	} {
		got := toAPI(tc.err)
		assert.Equal(t, tc.status, got.Status, "%v", tc.err)
		assert.Equal(t, tc.code, got.Code, "%v", tc.err)
		assert.Empty(t, got.RequestID, "only a buy of unknown outcome names a request id")
		if got.Status == http.StatusInternalServerError {
			assert.NotContains(t, got.Detail, "10.0.0.1", "internals stay in the log")
		}
	}
}

// A buy of unknown outcome is 503 unavailable, says so, and names the
// request id to retry with.
func TestAnUnknownOutcomeNamesItsRequestID(t *testing.T) {
	err := fmt.Errorf("order: %w", &order.UnknownOutcomeError{RequestID: "srv-1", Err: fmt.Errorf("stock: %w", context.DeadlineExceeded)})
	got := toAPI(err)
	assert.Equal(t, http.StatusServiceUnavailable, got.Status)
	assert.Equal(t, "unavailable", got.Code)
	assert.Equal(t, "srv-1", got.RequestID)
	assert.Equal(t, "2", got.RetryAfter)
	assert.Contains(t, got.Detail, "may have been placed")
}

// A store that cannot be reached, stalls, drops the connection or refuses
// work for now is a 503 the client may retry, never a 500. The errors are
// the ones go-redis returns from a real server in each state.
func TestStoreOutageIsUnavailable(t *testing.T) {
	ctx := t.Context()
	srv := testsvc.StartRedisServer(t)
	client := func(o redis.Options) *redis.Client {
		o.Addr, o.MaxRetries = srv.Addr(), -1
		c := redis.NewClient(&o)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	errs := map[string]error{
		"eof":                 io.ErrUnexpectedEOF,
		"closed network conn": fmt.Errorf("write: %w", net.ErrClosed),
		"sql bad conn":        fmt.Errorf("sql: %w", driver.ErrBadConn),
		"mysql invalid conn":  fmt.Errorf("sql: %w", mysql.ErrInvalidConn),
	}

	// The connection is closed by the server while the command waits.
	c := client(redis.Options{})
	id, err := c.ClientID(ctx).Result()
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Do(ctx, "BLPOP", "nothing", 5).Err() }()
	killer := srv.Client()
	require.Eventually(t, func() bool {
		list, _ := killer.ClientList(ctx).Result()
		return strings.Contains(list, fmt.Sprintf("id=%d ", id)) && strings.Contains(list, "cmd=blpop")
	}, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, killer.ClientKillByFilter(ctx, "ID", fmt.Sprint(id)).Err())
	errs["connection closed by server"] = <-done

	// Pool exhausted: the only connection is busy.
	c = client(redis.Options{PoolSize: 1, PoolTimeout: 50 * time.Millisecond})
	go func() { _ = c.Do(ctx, "BLPOP", "nothing", "0.5").Err() }()
	time.Sleep(100 * time.Millisecond)
	errs["pool timeout"] = c.Get(ctx, "k").Err()

	c = client(redis.Options{})
	require.NoError(t, c.Close())
	errs["client closed"] = c.Get(ctx, "k").Err()

	// Out of memory under noeviction: writes are refused.
	require.NoError(t, killer.ConfigSet(ctx, "maxmemory", "1").Err())
	errs["oom"] = client(redis.Options{}).Set(ctx, "k", "v", 0).Err()
	require.NoError(t, killer.ConfigSet(ctx, "maxmemory", "0").Err())

	// A replica refuses writes.
	other := testsvc.StartRedisServer(t)
	host, port, _ := net.SplitHostPort(other.Addr())
	require.NoError(t, killer.ReplicaOf(ctx, host, port).Err())
	errs["readonly"] = client(redis.Options{}).Set(ctx, "k", "v", 0).Err()
	require.NoError(t, killer.ReplicaOf(ctx, "NO", "ONE").Err())

	// Stalled past the read timeout.
	c = client(redis.Options{ReadTimeout: 50 * time.Millisecond})
	require.NoError(t, c.Ping(ctx).Err())
	srv.Freeze()
	errs["read timeout"] = c.Get(ctx, "k").Err()
	srv.Thaw()

	// Down.
	srv.Kill()
	errs["refused"] = client(redis.Options{}).Get(ctx, "k").Err()

	for name, err := range errs {
		t.Run(name, func(t *testing.T) {
			require.Error(t, err)
			got := toAPI(fmt.Errorf("stock: buy sku 1: %w", err))
			assert.Equal(t, http.StatusServiceUnavailable, got.Status, "%v", err)
			assert.Equal(t, "unavailable", got.Code, "%v", err)
			assert.NotEmpty(t, got.RetryAfter, "%v", err)
		})
	}
}
