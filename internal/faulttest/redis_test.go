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
)

// TestRedisRestartedWithoutData kills the deployment's own redis-server (no
// persistence) in the middle of a sale and starts it again empty. While it
// is down every buy is answered quickly with a 503 that names nothing
// internal; when it is back the first buyers of the SKU trigger a rebuild
// of its Redis state from MySQL, an admin can rebuild on demand, and an
// instance started on an empty Redis rebuilds at start. MySQL is never
// oversold. Orders accepted but still queued in the lost Redis are lost with
// it: their shoppers' GET /api/v1/orders/{id} answers 404.
func TestRedisRestartedWithoutData(t *testing.T) {
	if testing.Short() {
		t.Skip("starts seckill and redis-server processes")
	}
	rs := testsvc.StartRedisServer(t)
	d := newDeployment(t, rs.Addr(), testsvc.Prefix(t), testsvc.MySQL(t), nil)
	d.serve("full-1", "serve")
	d.serve("full-2", "serve")
	d.serve("full-3", "serve")
	const total, buyers = 300, 700
	sku := d.seed(total)

	c := d.buy(sku, "redis", buyers, 140)
	c.waitAccepted(40)
	// Hold the drain so that orders wait in Redis when it goes: batches in
	// flight block in their transactions, later orders stay queued.
	release := d.holdSKURow(sku)
	c.waitAccepted(120)
	inflight, queued := d.queueLen(sku)
	rs.Kill()
	down := time.Now()
	acceptedAtCrash := c.accepted.Load()
	// The blocked batches commit while Redis is down; what was only queued
	// is gone.
	time.AfterFunc(500*time.Millisecond, release)
	// Shoppers keep coming while Redis is down; a few more ask for their
	// orders.
	probes := d.probeOrders(c, 3*time.Second)
	rs.Start()
	up := time.Now()
	// The first 202 after Redis is back shows the buy path rebuilt the SKU.
	recovered, first := d.firstAccept(sku, "redis-back", up, 30*time.Second)
	ss := append(c.Wait(), first)

	var downAnswers, slow int
	for _, s := range append(ss, probes...) {
		if s.Err == nil && s.Took > 5*time.Second {
			slow++
		}
	}
	for _, s := range ss {
		if s.Err == nil && s.Status >= 500 {
			downAnswers++
		}
	}
	assert.Zero(t, slow, "every request answered within 5s")
	checkErrorBodies(t, ss)
	checkErrorBodies(t, probes)

	// On demand: the admin rebuild.
	rec := d.admin("POST", fmt.Sprintf("/admin/skus/%d/reconcile", sku), nil, http.StatusOK)
	assert.Equal(t, true, rec.Body["consistent"], rec.Raw)
	rep := d.drained(sku, 60*time.Second)
	assert.LessOrEqual(t, rep.Sold, int64(total))

	f := figures{scenario: "redis-restart-no-persistence", recoverMS: recovered.Sub(up).Milliseconds()}
	missing := d.checkOrders(sku, accepted(append(ss, probes...)), true, &f)
	// What a shopper whose order was lost sees.
	owner := accepted(ss)
	for _, id := range missing {
		a := d.call(d.live().URL(), "GET", "/api/v1/orders/"+id, owner[id], nil)
		require.NoError(t, a.Err)
		assert.Equal(t, http.StatusNotFound, a.Status, "lost order %s: %s", id, a.Raw)
	}
	d.verify(sku)

	// At start: Redis loses everything again while no one buys; an instance
	// restarted on it has rebuilt the SKU by the time it serves.
	rs.Kill()
	rs.Start()
	p := d.api[0]
	p.kill()
	p.start()
	st, err := d.rdb.HGetAll(context.Background(), d.prefix+stock.Tag(sku)+":stock").Result()
	require.NoError(t, err)
	assert.NotEmpty(t, st["left"], "the restarted instance rebuilt the sku at start")
	d.verify(sku)

	f.more = []string{fmt.Sprintf("accepted_at_crash=%d", acceptedAtCrash), fmt.Sprintf("down_ms=%d", up.Sub(down).Milliseconds()),
		fmt.Sprintf("inflight_at_crash=%d", inflight), fmt.Sprintf("queued_at_crash=%d", queued),
		fmt.Sprintf("answers_5xx=%d", downAnswers), fmt.Sprintf("p50_answer_ms_while_down=%d", quantile(probes, 0.5).Milliseconds()),
		fmt.Sprintf("p99_answer_ms_while_down=%d", quantile(probes, 0.99).Milliseconds()),
		fmt.Sprintf("max_answer_ms_while_down=%d", quantile(probes, 1).Milliseconds()),
		fmt.Sprintf("sold=%d", rep.Sold)}
	f.log(t)
	t.Logf("answers: %v; while down: %v", tally(ss), tally(probes))
}

// probeOrders sends buys and order reads to every instance for dur while a
// store is down and returns what they got.
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
			mu.Lock()
			out = append(out, s)
			mu.Unlock()
			g := shopper{User: user, Attempts: 1}
			g.answer = d.call(p.URL(), "GET", "/api/v1/orders/"+fmt.Sprint(c.sku)+"-"+strings.Repeat("0", 24), user, nil)
			mu.Lock()
			out = append(out, g)
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
		if s.Err == nil && (s.Status == http.StatusAccepted || s.str("error") == "sold_out") {
			s.Order = s.str("order_id")
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
