package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// openTestRedis opens a client to addr the way the server does, with a short
// read timeout, and closes it when the test ends.
func openTestRedis(t *testing.T, addrs []string, readTimeout time.Duration) redis.UniversalClient {
	t.Helper()
	rdb, closeRedis, err := openRedis(t.Context(), config.Redis{
		Addrs:          addrs,
		PoolSize:       16,
		DialTimeout:    time.Second,
		ReadTimeout:    readTimeout,
		WriteTimeout:   readTimeout,
		ConnectTimeout: 5 * time.Second,
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(closeRedis)
	return rdb
}

// warmPool makes the client hold n open connections, so a retry would not
// have to dial (and would reach the server).
func warmPool(t *testing.T, rdb redis.UniversalClient, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			// Each BLPOP holds its connection for 50ms, so n are open at once.
			_ = rdb.Do(t.Context(), "BLPOP", "warm:"+testsvc.RandomID(4), "0.05").Err()
		})
	}
	wg.Wait()
}

// dialCounter counts the connections a client dials.
type dialCounter struct{ n *atomic.Int32 }

func (h dialCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		h.n.Add(1)
		return next(ctx, network, addr)
	}
}

func (h dialCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h dialCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// countDials counts the connections rdb dials from now on.
func countDials(rdb redis.UniversalClient) *atomic.Int32 {
	n := new(atomic.Int32)
	rdb.AddHook(dialCounter{n: n})
	return n
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// stalled runs call while srv is frozen, thaws srv after hold, and returns
// call's error. A call made on a connection dialled during the stall sent
// nothing (its handshake timed out first), so that round is made again:
// the client, with warm connections, may still dial one.
func stalled(t *testing.T, srv *testsvc.RedisServer, rdb redis.UniversalClient, hold time.Duration, call func() error) error {
	t.Helper()
	dials := countDials(rdb)
	for range 5 {
		warmPool(t, rdb, 8)
		before := dials.Load()
		srv.Freeze()
		done := make(chan error, 1)
		go func() { done <- call() }()
		time.Sleep(hold)
		srv.Thaw()
		err := <-done
		if dials.Load() == before {
			return err
		}
		t.Logf("the stalled call dialled a new connection (%v): nothing reached the server; again", err)
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("every stalled call dialled a new connection")
	return nil
}

// A script whose reply does not come in time is not sent again by the
// client: it may have run, and running a script twice (a buy, a lock, a
// claim) is not the same as running it once.
func TestRedisScriptRunsOnceWhenTheReplyTimesOut(t *testing.T) {
	const readTimeout = 100 * time.Millisecond
	ctx := t.Context()
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) (*testsvc.RedisServer, []string)
	}{
		{"standalone", func(t *testing.T) (*testsvc.RedisServer, []string) {
			srv := testsvc.StartRedisServer(t)
			return srv, []string{srv.Addr()}
		}},
		{"cluster", func(t *testing.T) (*testsvc.RedisServer, []string) {
			srv := testsvc.StartRedisClusterNode(t)
			// Two seed addresses make openRedis build a Cluster client.
			return srv, []string{srv.Addr(), srv.Addr()}
		}},
	} {
		t.Run(tc.name+"/counter", func(t *testing.T) {
			srv, addrs := tc.start(t)
			rdb := openTestRedis(t, addrs, readTimeout)
			incr := redis.NewScript(`return redis.call('INCR', KEYS[1])`)
			require.NoError(t, incr.Load(ctx, rdb).Err())
			err := stalled(t, srv, rdb, 400*time.Millisecond, func() error {
				return incr.Run(ctx, rdb, []string{"n"}).Err()
			})

			require.Error(t, err)
			assert.True(t, isTimeout(err), "want a timeout, got %v", err)
			// The server runs what reached it during the stall once it
			// resumes (on a loaded machine, some time after), and only that.
			require.Eventually(t, func() bool { return srv.Client().Exists(ctx, "n").Val() == 1 },
				10*time.Second, 20*time.Millisecond, "the script reached the server")
			time.Sleep(200 * time.Millisecond)
			n, err := srv.Client().Get(ctx, "n").Int()
			require.NoError(t, err)
			assert.Equal(t, 1, n, "the script ran once")
		})

		t.Run(tc.name+"/buy", func(t *testing.T) {
			srv, addrs := tc.start(t)
			rdb := openTestRedis(t, addrs, readTimeout)
			store := stock.NewStore(rdb, stock.StoreOptions{Prefix: "t:"})
			const sku = 7
			_, err := store.Configure(ctx, sku, stock.Config{Total: 10, Limit: 5, Expires: time.Now().Add(time.Hour)}, true)
			require.NoError(t, err)
			buy := func() error {
				_, res, err := store.Buy(ctx, stock.Part{SKU: sku}, []stock.Request{{User: "u", Qty: 1, Created: time.Now()}}, stock.Guard{})
				if err == nil {
					err = res[0].Err
				}
				return err
			}
			require.NoError(t, buy()) // loads the script

			// The stall ends after the reply timed out but before a resend
			// would have timed out too: a resend reaches the server after
			// the first attempt ran.
			err = stalled(t, srv, rdb, 150*time.Millisecond, buy)

			require.Error(t, err)
			assert.True(t, isTimeout(err), "want a timeout, got %v", err)
			// The stalled buy runs once the server resumes (on a loaded
			// machine, some time after). It is watched through a client
			// of the default timeouts: on a loaded machine the 100ms one
			// may time out read after read.
			check := stock.NewStore(srv.Client(), stock.StoreOptions{Prefix: "t:"})
			var last atomic.Value // the condition runs in a goroutine of its own
			if !assert.Eventually(t, func() bool {
				st, _, err := check.State(ctx, stock.Part{SKU: sku})
				last.Store(fmt.Sprintf("left %d, err %v", st.Left, err))
				return err == nil && st.Left < 9
			}, 10*time.Second, 20*time.Millisecond) {
				t.Fatalf("the stalled buy never reached the server: %v", last.Load())
			}
			time.Sleep(200 * time.Millisecond)
			st, ok, err := check.State(ctx, stock.Part{SKU: sku})
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, int64(8), st.Left, "each buy took its unit once")
			qs, err := check.Queue(stock.Part{SKU: sku}).Stats(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(2), qs.Due+qs.Delayed, "one order task per buy")
		})
	}
}

// A buy while Redis stalls or is down is a 503 with Retry-After, never a
// 500, and says its outcome is unknown: the stalled script may run once
// Redis resumes. The answer names a request id (the server makes one for a
// buy sent without), and the shopper's retry with it gets that order.
func TestBuyWhileRedisStallsIsUnavailable(t *testing.T) {
	srv := testsvc.StartRedisServer(t)
	s := startSale(t, saleOpts{noWorkers: true, env: map[string]string{
		"SECKILL_REDIS_ADDRS":        srv.Addr(),
		"SECKILL_REDIS_READ_TIMEOUT": "200ms",
		"SECKILL_STOCK_STRATEGY":     "atomic",
	}})
	sku := s.seed(10, 5)
	require.Equal(t, http.StatusAccepted, s.buy(0, sku, "u1", 1).Status)

	// The stall outlasts the read timeout, and ends before a resend of the
	// script would time out as well.
	srv.Freeze()
	done := make(chan testutil.Reply, 1)
	go func() { done <- s.do(0, "POST", "/api/v1/orders", "u2", map[string]any{"sku_id": sku, "qty": 1}) }()
	time.Sleep(300 * time.Millisecond)
	srv.Thaw()
	r := <-done
	assert.Equal(t, http.StatusServiceUnavailable, r.Status, r.Raw)
	assert.Equal(t, "unavailable", r.Str("error"), r.Raw)
	assert.Contains(t, r.Str("detail"), "may have been placed", r.Raw)
	assert.NotEmpty(t, r.Header.Get("Retry-After"), r.Raw)
	rid := r.Str("request_id")
	require.NotEmpty(t, rid, "the answer names the request id to retry with: %s", r.Raw)

	time.Sleep(200 * time.Millisecond)
	retry := s.do(0, "POST", "/api/v1/orders", "u2", map[string]any{"sku_id": sku, "qty": 1, "request_id": rid})
	require.Equal(t, http.StatusAccepted, retry.Status, retry.Raw)
	rep := s.audit(sku)
	assert.Equal(t, int64(8), *rep.RedisLeft, "the stalled buy took its unit once")
	assert.Equal(t, retry.Str("order_id"), s.do(0, "POST", "/api/v1/orders", "u2",
		map[string]any{"sku_id": sku, "qty": 1, "request_id": rid}).Str("order_id"), "the same order again")

	srv.Kill()
	r = s.do(0, "POST", "/api/v1/orders", "u3", map[string]any{"sku_id": sku, "qty": 1, "request_id": "mine-1"})
	assert.Equal(t, http.StatusServiceUnavailable, r.Status, r.Raw)
	assert.Equal(t, "unavailable", r.Str("error"), r.Raw)
	assert.Equal(t, "mine-1", r.Str("request_id"), "the client's own request id: %s", r.Raw)
	assert.NotEmpty(t, r.Header.Get("Retry-After"), r.Raw)
}
