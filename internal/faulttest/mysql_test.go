package faulttest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/testsvc"
)

// TestMySQLDownDuringDrain kills the deployment's own mariadbd in the middle
// of a sale, keeps it down for 10 seconds and restarts it on the same data
// directory and port. The workers back off while it is down (the drain
// retries in place, leases stay extended, nothing is dead-lettered), and
// the drain resumes by itself when it is back.
func TestMySQLDownDuringDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts seckill and mariadbd processes")
	}
	m := startMariaDB(t)
	_, prefix := testsvc.Redis(t)
	d := newDeployment(t, testsvc.Env(t, testsvc.EnvRedis), prefix, m.DSN(), nil)
	a := d.serve("full-1", "serve")
	b := d.serve("full-2", "serve")
	const stock, buyers = 400, 500
	sku := d.seed(stock)

	c := d.buy(sku, "sql", buyers, 100)
	c.waitAccepted(100)
	m.kill()
	down := time.Now()
	// Orders taken while the SKU is still in the instances' catalog cache
	// queue up; their batches retry in place.
	deadline := time.Now().Add(10 * time.Second)
	var queuedDuringOutage int64
	for time.Now().Before(deadline) {
		if in, pending := d.queueLen(sku); in+pending > queuedDuringOutage {
			queuedDuringOutage = in + pending
		}
		time.Sleep(100 * time.Millisecond)
	}
	dead := d.deadLetters(sku)
	assert.Zero(t, dead, "nothing is dead-lettered while MySQL is down")
	retries := d.metric(a, "seckill_drain_sql_retries_total") + d.metric(b, "seckill_drain_sql_retries_total")
	acceptedDuringOutage := c.accepted.Load()
	m.start()
	up := time.Now()
	outage := up.Sub(down)

	ss := c.Wait()
	rep := d.drained(sku, 60*time.Second)
	took := time.Since(up)
	// Shoppers arriving after the outage buy as before.
	after := d.buy(sku, "sql-after", 200, 200).Wait()
	assert.Positive(t, len(accepted(after)), "orders are accepted again: %v", tally(after))
	ss = append(ss, after...)
	checkErrorBodies(t, ss)
	rep = d.drained(sku, 60*time.Second)
	assert.Zero(t, rep.DeadLetters)
	assert.Positive(t, retries, "the drain retried while MySQL was down")

	f := figures{scenario: "mysql-down-10s", recoverMS: took.Milliseconds()}
	d.checkOrders(sku, accepted(ss), false, &f)
	d.verify(sku)
	f.more = []string{fmt.Sprintf("outage_ms=%d", outage.Milliseconds()), fmt.Sprintf("queued_during_outage=%d", queuedDuringOutage),
		fmt.Sprintf("sql_retries=%.0f", retries), fmt.Sprintf("dead_letters=%d", dead),
		fmt.Sprintf("accepted_by_end_of_outage=%d", acceptedDuringOutage), fmt.Sprintf("answers_503=%d", count5xx(ss)),
		fmt.Sprintf("accepted_after=%d", len(accepted(after)))}
	f.log(t)
	t.Logf("answers: %v", tally(ss))
}

// deadLetters counts sku's dead letters.
func (d *deployment) deadLetters(sku uint64) int64 {
	n, _ := d.rdb.ZCard(context.Background(), d.prefix+stock.Tag(sku)+":q:dead").Result()
	return n
}

func count5xx(ss []shopper) int {
	n := 0
	for _, s := range ss {
		if s.Err == nil && s.Status >= 500 {
			n++
		}
	}
	return n
}
