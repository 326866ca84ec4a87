package faulttest

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// TestMethodFlood sends 20,000 requests to a path no route has, each with a
// method of its own, to a running `seckill serve`. The server's metrics
// label requests by method, route and status, which all come from what the
// client sends; bounded, they give the whole flood one series, so /metrics
// stays the size it was and the process's memory stays flat. Before and
// after are measured after a warm-up of the same traffic with one method,
// so that connections, buffers and the heap are already at their working
// size.
func TestMethodFlood(t *testing.T) {
	testutil.SkipShort(t, "starts a seckill process")
	const (
		warmUp   = 2_000
		requests = 20_000
		conns    = 8
		// /metrics changes a little with every scrape (the Go runtime's
		// figures, the counts of the series the flood adds to); one new
		// series of the latency histogram is about 1.5 KiB.
		metricsSlack = 4 << 10
		rssSlackKiB  = 10 << 10
	)
	_, prefix := testsvc.Redis(t)
	env := testutil.RecoveryEnv(testsvc.Env(t, testsvc.EnvRedis), prefix, testsvc.ServerMySQL(t), adminToken)
	p := newProc(t, "flood", env, true, "serve")
	p.start()
	// Not the deployment's client: it holds every exchange to
	// api/openapi.yaml, which knows no made-up method.
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: conns, DisableCompression: true,
	}}
	t.Cleanup(client.CloseIdleConnections)

	flood(t, client, p.URL(), warmUp, conns, func(int) string { return "WARMUP" })
	metricsBytes(t, client, p.URL()) // /metrics has a latency series of its own from its first scrape on
	metrics0, rss0 := metricsBytes(t, client, p.URL()), p.RSSKiB()
	flood(t, client, p.URL(), requests, conns, func(i int) string { return fmt.Sprintf("MADEUP%06d", i) })
	metrics1, rss1 := metricsBytes(t, client, p.URL()), p.RSSKiB()

	t.Logf("FAULT scenario=method-flood requests=%d rss_kib_before=%d rss_kib_after=%d metrics_bytes_before=%d metrics_bytes_after=%d",
		requests, rss0, rss1, metrics0, metrics1)
	require.NotZero(t, rss0, "VmRSS of the server")
	assert.LessOrEqual(t, metrics1-metrics0, metricsSlack, "growth of /metrics in bytes")
	assert.LessOrEqual(t, rss1-rss0, int64(rssSlackKiB), "growth of the server's RSS in KiB")
}

// flood sends n requests from conns connections to an unrouted path of
// base, request i with the method method(i), and requires every one to be
// answered 404.
func flood(t *testing.T, client *http.Client, base string, n, conns int, method func(int) string) {
	t.Helper()
	var next, wrong atomic.Int64
	var firstErr atomic.Value // error
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				status, err := sendMethod(client, method(i), base+"/no/such/route")
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if status != http.StatusNotFound {
					wrong.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		t.Fatalf("flood: %v", err)
	}
	require.Zero(t, wrong.Load(), "answers other than 404")
}

// sendMethod sends a bodiless request and returns its status once the body
// is read, so that the connection is reused.
func sendMethod(client *http.Client, method, url string) (int, error) {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

// metricsBytes is the size of the uncompressed /metrics page of base.
func metricsBytes(t *testing.T, client *http.Client, base string) int {
	t.Helper()
	resp, err := client.Get(base + "/metrics")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return len(body)
}
