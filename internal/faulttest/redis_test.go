package faulttest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// TestRedisRestartedWithoutData kills the deployment's own redis-server (no
// persistence) in the middle of a sale and starts it again empty. While it
// is down every buy is answered quickly with a 503 that names nothing
// internal. When it is back the first buyers of the SKU trigger a rebuild of
// its Redis state from MySQL, an admin can rebuild on demand, and an
// instance started on an empty Redis rebuilds at start.
//
// The drain is held at the crash, so Redis holds orders of both kinds when
// it goes: queued ones are lost with it (their shoppers' GET
// /api/v1/orders/{id} answers 404); batches a worker had claimed survive in
// the worker and reach MySQL after the rebuilt Redis has sold the whole
// stock again, where the stock guard refuses as many as would oversell
// (status failed). MySQL is never oversold.
func TestRedisRestartedWithoutData(t *testing.T) {
	testutil.SkipShort(t, "starts seckill and redis-server processes")
	rs := testsvc.StartRedisServer(t)
	d := newDeployment(t, rs.Addr(), testsvc.Prefix(t), testsvc.ServerMySQL(t), nil)
	d.serve("full-1", "serve")
	d.serve("full-2", "serve")
	d.serve("full-3", "serve")
	const total, buyers = 300, 700
	sku := d.seed(total)

	c := d.buy(sku, "redis", buyers, 140)
	c.waitAccepted(40)
	// Hold the drain: claimed batches block in their transactions, later
	// orders stay queued.
	release := d.holdSKURow(sku)
	c.waitAccepted(120)
	d.waitBlockedBatch(sku)
	inflight, queued := d.queueLen(sku)
	rs.Kill()
	down := time.Now()
	acceptedAtCrash := c.accepted.Load()
	// Shoppers keep coming while Redis is down; probes buy and read orders.
	probes := d.probeOrders(c, 3*time.Second)
	rs.Start()
	up := time.Now()
	// The first 202 after Redis is back shows the buy path rebuilt the SKU.
	recovered, first := d.firstAccept(sku, "redis-back", up, 30*time.Second)
	ss := append(c.Wait(), first)
	// Later shoppers buy what the rebuilt Redis has left (the crowd that was
	// buying through the outage may have taken it all).
	left, err := d.rdb.HGet(t.Context(), d.prefix+stock.Tag(sku)+":stock", "left").Int64()
	require.NoError(t, err)
	after := d.buy(sku, "redis-after", 400, 200).Wait()
	if left > 0 {
		assert.Positive(t, len(accepted(after)), "orders are accepted again (%d left): %v", left, tally(after))
	}
	ss = append(ss, after...)

	var slow, answers5xx int
	for _, s := range append(ss, probes...) {
		if s.Err == nil && s.Took > 5*time.Second {
			slow++
		}
		if s.Err == nil && s.Status >= 500 {
			answers5xx++
		}
	}
	assert.Zero(t, slow, "every request answered within 5s")
	checkErrorBodies(t, ss)
	checkErrorBodies(t, probes)

	// The held batches go on; then the queue empties.
	release()
	deadline := time.Now().Add(60 * time.Second)
	for in, pending := d.queueLen(sku); in+pending > 0; in, pending = d.queueLen(sku) {
		require.True(t, time.Now().Before(deadline), "queue not empty in 60s: %d in flight, %d pending", in, pending)
		time.Sleep(100 * time.Millisecond)
	}
	// On demand: the admin rebuild (refused orders gave units back to a
	// Redis that had not counted them).
	rec := d.admin("POST", fmt.Sprintf("/admin/skus/%d/reconcile", sku), nil, http.StatusOK)
	assert.Equal(t, true, rec.Body["consistent"], rec.Raw)
	rep := d.drained(sku, 60*time.Second)
	assert.Equal(t, int64(total), rep.Sold, "sold out, never oversold")

	f := figures{scenario: "redis-restart-no-persistence", recoverMS: recovered.Sub(up).Milliseconds()}
	acc := accepted(append(ss, probes...))
	missing := d.checkOrders(sku, acc, true, &f)
	assert.Positive(t, f.refused, "the guard refused the surviving batches the rebuilt Redis sold again")
	// What shoppers see: a lost order is 404, a refused one failed.
	for _, id := range missing {
		a := d.call(d.live().URL(), "GET", "/api/v1/orders/"+id, acc[id], nil)
		require.NoError(t, a.Err)
		assert.Equal(t, http.StatusNotFound, a.Status, "lost order %s: %s", id, a.Raw)
	}
	st := d.sqlState(sku)
	for id, status := range st.status {
		if status != "failed" {
			continue
		}
		a := d.call(d.live().URL(), "GET", "/api/v1/orders/"+id, st.users[id], nil)
		require.NoError(t, a.Err)
		assert.Equal(t, "failed", a.Str("status"), "refused order %s: %s", id, a.Raw)
	}
	d.verify(sku)
	// Every unpaid order has its payment deadline, also those whose deadline
	// was in the lost Redis.
	assert.Zero(t, d.missingDeadlines(sku), "pending orders without a payment deadline")

	// At start: Redis loses everything again while no one buys; an instance
	// restarted on it has rebuilt the SKU by the time it serves.
	rs.Kill()
	rs.Start()
	p := d.api[0]
	p.Kill()
	p.start()
	hash, err := d.rdb.HGetAll(t.Context(), d.prefix+stock.Tag(sku)+":stock").Result()
	require.NoError(t, err)
	assert.NotEmpty(t, hash["left"], "the restarted instance rebuilt the sku at start")
	assert.Zero(t, d.missingDeadlines(sku), "pending orders without a payment deadline after the restart")
	d.verify(sku)

	var buys, reads []shopper
	for i, s := range probes {
		if i%2 == 0 {
			buys = append(buys, s)
		} else {
			reads = append(reads, s)
		}
	}
	f.more = []string{fmt.Sprintf("accepted_at_crash=%d", acceptedAtCrash), fmt.Sprintf("down_ms=%d", up.Sub(down).Milliseconds()),
		fmt.Sprintf("inflight_at_crash=%d", inflight), fmt.Sprintf("queued_at_crash=%d", queued),
		fmt.Sprintf("answers_5xx=%d", answers5xx),
		fmt.Sprintf("buy_p50_ms_while_down=%d", quantile(buys, 0.5).Milliseconds()),
		fmt.Sprintf("buy_max_ms_while_down=%d", quantile(buys, 1).Milliseconds()),
		fmt.Sprintf("read_p50_ms_while_down=%d", quantile(reads, 0.5).Milliseconds()),
		fmt.Sprintf("read_max_ms_while_down=%d", quantile(reads, 1).Milliseconds()),
		fmt.Sprintf("sold=%d", rep.Sold)}
	f.log(t)
	t.Logf("answers: %v; while down: buys %v, reads %v", tally(ss), tally(buys), tally(reads))
}

// missingDeadlines counts sku's pending_payment orders that no payment
// deadline task in the queue names (a deadline task's payload is the
// comma-separated ids of the orders it expires).
func (d *deployment) missingDeadlines(sku uint64) int {
	d.t.Helper()
	s := d.sqlState(sku)
	base := d.prefix + stock.Tag(sku) + ":q:"
	ctx := context.Background()
	named := map[string]bool{}
	ids, err := d.rdb.ZRange(ctx, base+"ready", 0, -1).Result()
	require.NoError(d.t, err)
	for _, id := range ids {
		if !strings.HasPrefix(id, "exp:") {
			continue
		}
		payload, err := d.rdb.HGet(ctx, base+"data", id).Result()
		require.NoError(d.t, err)
		for _, o := range strings.Split(payload, ",") {
			named[o] = true
		}
	}
	n := 0
	for id, st := range s.status {
		if st == "pending_payment" && !named[id] {
			n++
		}
	}
	return n
}

// probeOrders sends buys and order reads to every instance for dur while a
// store is down and returns what they got: a buy, then its shopper's read,
// in turn.
func (d *deployment) probeOrders(c *crowd, dur time.Duration) []shopper {
	var mu sync.Mutex
	var out []shopper
	var wg sync.WaitGroup
	end := time.Now().Add(dur)
	for i := 0; time.Now().Before(end); i++ {
		p := d.api[i%len(d.api)]
		user := fmt.Sprintf("probe-%d", i)
		wg.Go(func() {
			s := shopper{User: user, Attempts: 1}
			s.answer = d.call(p.URL(), "POST", "/api/v1/orders", user, map[string]any{"sku_id": c.sku, "qty": 1})
			if s.Status == http.StatusAccepted {
				s.Order = s.Str("order_id")
			}
			g := shopper{User: user, Attempts: 1}
			g.answer = d.call(p.URL(), "GET", "/api/v1/orders/"+fmt.Sprint(c.sku)+"-"+strings.Repeat("0", 24), user, nil)
			mu.Lock()
			out = append(out, s, g)
			mu.Unlock()
		})
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	return out
}

// firstAccept buys with fresh shoppers from after until one is accepted (or
// told the SKU is sold out) and returns when, and that shopper.
func (d *deployment) firstAccept(sku uint64, tag string, after time.Time, limit time.Duration) (time.Time, shopper) {
	d.t.Helper()
	for i := 0; ; i++ {
		s := shopper{User: fmt.Sprintf("%s-%d", tag, i), Attempts: 1}
		s.answer = d.call(d.api[i%len(d.api)].URL(), "POST", "/api/v1/orders", s.User, map[string]any{"sku_id": sku, "qty": 1})
		if s.Err == nil && (s.Status == http.StatusAccepted || s.Str("error") == "sold_out") {
			s.Order = s.Str("order_id")
			return time.Now(), s
		}
		a := s.answer
		if time.Since(after) > limit {
			d.t.Fatalf("no order accepted within %s after the store came back: %d %s %v", limit, a.Status, a.Raw, a.Err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// quantile returns the q-quantile of the answer times of ss.
func quantile(ss []shopper, q float64) time.Duration {
	if len(ss) == 0 {
		return 0
	}
	ds := make([]time.Duration, len(ss))
	for i, s := range ss {
		ds[i] = s.Took
	}
	slices.Sort(ds)
	return ds[int(q*float64(len(ds)-1))]
}
