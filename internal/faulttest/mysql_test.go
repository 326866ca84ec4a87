package faulttest

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// TestMySQLDownDuringDrain takes the deployment's own mariadbd away for 10
// seconds in the middle of a sale: "killed" kills it and restarts it on the
// same data directory and port, "frozen" stops it with SIGSTOP and
// continues it (connections stay open, nothing answers). While it is away
// the drain waits — killed, it retries in place with a capped back-off;
// frozen, its statements wait for an answer — its leases stay extended,
// nothing is dead-lettered, and the drain resumes by itself when MySQL is
// back.
func TestMySQLDownDuringDrain(t *testing.T) {
	testutil.SkipShort(t, "starts seckill and mariadbd processes")
	for _, tc := range []struct {
		name       string
		stop, cont func(m *mariaDB)
		errors     bool // the drain's statements fail (rather than wait) while MySQL is away
	}{
		{"killed", (*mariaDB).kill, (*mariaDB).start, true},
		{"frozen", func(m *mariaDB) { m.signal(syscall.SIGSTOP) }, func(m *mariaDB) { m.signal(syscall.SIGCONT) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) { mysqlDown(t, tc.name, tc.stop, tc.cont, tc.errors) })
	}
}

func mysqlDown(t *testing.T, name string, stop, cont func(*mariaDB), errors bool) {
	m := startMariaDB(t)
	_, prefix := testsvc.Redis(t)
	d := newDeployment(t, testsvc.Env(t, testsvc.EnvRedis), prefix, m.DSN(), nil)
	a := d.serve("full-1", "serve")
	b := d.serve("full-2", "serve")
	const stock, buyers = 600, 500
	sku := d.seed(stock)

	c := d.buy(sku, "sql", buyers, 100)
	c.waitAccepted(100)
	stop(m)
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
	cont(m)
	up := time.Now()
	outage := up.Sub(down)
	// The drain catches up by itself.
	caughtUp := time.Now().Add(60 * time.Second)
	for in, pending := d.queueLen(sku); in+pending > 0; in, pending = d.queueLen(sku) {
		require.True(t, time.Now().Before(caughtUp), "%d orders still queued 60s after MySQL is back", in+pending)
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(up)

	ss := c.Wait()
	rep := d.drained(sku, 60*time.Second)
	assert.True(t, rep.Consistent, "%+v", rep)
	// Shoppers arriving after the outage buy as before.
	after := d.buy(sku, "sql-after", 200, 200).Wait()
	assert.Positive(t, len(accepted(after)), "orders are accepted again: %v", tally(after))
	ss = append(ss, after...)
	checkErrorBodies(t, ss)
	rep = d.drained(sku, 60*time.Second)
	assert.Zero(t, rep.DeadLetters)
	if errors {
		assert.Positive(t, retries, "the drain retried while MySQL was down")
	}
	away := during(ss, down, up)

	f := figures{scenario: "mysql-" + name + "-10s", recoverMS: took.Milliseconds()}
	d.checkOrders(sku, accepted(ss), false, &f)
	d.verify(sku)
	f.more = []string{fmt.Sprintf("outage_ms=%d", outage.Milliseconds()), fmt.Sprintf("queued_during_outage=%d", queuedDuringOutage),
		fmt.Sprintf("sql_retries=%.0f", retries), fmt.Sprintf("dead_letters=%d", dead),
		fmt.Sprintf("accepted_by_end_of_outage=%d", acceptedDuringOutage), fmt.Sprintf("answers_503=%d", count5xx(ss)),
		fmt.Sprintf("accepted_after=%d", len(accepted(after))),
		fmt.Sprintf("answer_p50_ms_while_away=%d", quantile(away, 0.5).Milliseconds()),
		fmt.Sprintf("answer_max_ms_while_away=%d", quantile(away, 1).Milliseconds())}
	f.log(t)
	t.Logf("answers: %v; sent while away: %v", tally(ss), tally(away))
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
