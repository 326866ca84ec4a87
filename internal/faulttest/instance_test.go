package faulttest

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testutil"
)

// restartUntilPersisted starts victim again and returns how long it took
// from then until every order of ids was in MySQL.
func (d *deployment) restartUntilPersisted(victim *proc, ids []string) time.Duration {
	d.t.Helper()
	restarted := time.Now()
	victim.start()
	d.waitPersisted(ids, 60*time.Second)
	return time.Since(restarted)
}

// blockedDrain starts two API-only instances and one full instance (the
// victim: the only one that drains) on a shared deployment, seeds a SKU
// with stock, holds its row in MySQL and sets buyers shoppers (tagged tag,
// 150 a second) on it. It returns once waitFor orders were accepted and the
// victim's drain batch is blocked inside its transaction, with the
// release of the row and the IDs of that batch.
func blockedDrain(t *testing.T, stock int64, buyers int, tag string, waitFor int64) (d *deployment, victim *proc, sku uint64, c *crowd, release func(), held []string) {
	t.Helper()
	d = sharedDeployment(t, nil)
	d.serve("api-1", "serve", "--api-only")
	d.serve("api-2", "serve", "--api-only")
	victim = d.serve("full-3", "serve")
	sku = d.seed(stock)

	release = d.holdSKURow(sku)
	c = d.buy(sku, tag, buyers, 150)
	c.waitAccepted(waitFor)
	d.waitBlockedBatch(sku)
	return d, victim, sku, c, release, d.inflightIDs(sku)
}

// TestKillInstanceMidSale kills -9 one of three instances while shoppers
// buy and while its drain batch is inside its MySQL transaction, then
// restarts it. The other two serve the API only, so the batch in flight is
// the killed instance's: its transaction rolls back, its lease expires, and
// the restarted instance takes the batch over and writes each order once.
func TestKillInstanceMidSale(t *testing.T) {
	testutil.SkipShort(t, "starts seckill processes")
	const stock, buyers = 300, 600
	d, victim, sku, c, release, held := blockedDrain(t, stock, buyers, "kill", 60)
	victim.Kill()
	acceptedAtKill := c.accepted.Load()
	release()
	time.Sleep(500 * time.Millisecond)
	took := d.restartUntilPersisted(victim, held)

	ss := c.Wait()
	checkErrorBodies(t, ss)
	rep := d.drained(sku, 60*time.Second)
	assert.Zero(t, rep.DeadLetters)
	f := figures{scenario: "kill-instance", recovered: len(held), recoverMS: took.Milliseconds()}
	d.checkOrders(sku, accepted(ss), false, &f)
	assert.Equal(t, int64(stock), rep.Sold, "the stock sells out once")
	d.verify(sku)
	f.more = []string{fmt.Sprintf("accepted_at_kill=%d", acceptedAtKill), fmt.Sprintf("no_answer=%d", tally(ss)["no answer"]), fmt.Sprintf("retried_elsewhere=%d", retried(ss))}
	f.log(t)
	t.Logf("answers: %v", tally(ss))
}

// TestSIGTERMDuringLoad stops the only draining instance with SIGTERM while
// shoppers buy and its batch waits inside its transaction. In "finish" the
// batch can complete during shutdown and is written; in "return" it stays
// blocked past the consumer's shutdown grace (10s) and is handed back to
// the queue. Either way the process exits 0, leaves no task in flight, and
// every 202 is in MySQL after the instance is restarted.
func TestSIGTERMDuringLoad(t *testing.T) {
	testutil.SkipShort(t, "starts seckill processes")
	for _, tc := range []struct {
		name    string
		unblock time.Duration // when the batch may go on, after SIGTERM; 0: after the exit
	}{
		{"finish", time.Second},
		{"return", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const stock, buyers = 200, 400
			d, victim, sku, c, release, held := blockedDrain(t, stock, buyers, "term-"+tc.name, 40)
			if tc.unblock > 0 {
				time.AfterFunc(tc.unblock, release)
			}
			exit, err := victim.StopGracefully(30 * time.Second)
			require.NoError(t, err, victim.Tail(20))
			inflight, pending := d.queueLen(sku)
			assert.Zero(t, inflight, "nothing left in flight after a graceful exit")
			finished := len(held) - d.notPersisted(held)
			if tc.unblock > 0 {
				assert.Equal(t, len(held), finished, "the batch was written before the exit")
			} else {
				assert.Zero(t, finished, "the blocked batch was not written")
				assert.GreaterOrEqual(t, pending, int64(len(held)), "the blocked batch went back to the queue")
			}
			release()
			// Orders waiting at the restart, the handed-back batch among them.
			waiting := d.pendingIDs(sku)
			took := d.restartUntilPersisted(victim, waiting)

			ss := c.Wait()
			checkErrorBodies(t, ss)
			for _, s := range ss {
				// The API instances keep serving: no 5xx but a busy SKU
				// lock on a loaded machine, which a shopper retries.
				if s.Err == nil && !(s.Status == http.StatusServiceUnavailable && s.Str("error") == "busy") {
					assert.Less(t, s.Status, http.StatusInternalServerError, "%s: %s", s.User, s.Raw)
				}
			}
			rep := d.drained(sku, 60*time.Second)
			assert.Zero(t, rep.DeadLetters)
			f := figures{scenario: "sigterm-" + tc.name, recovered: len(held) - finished, recoverMS: took.Milliseconds()}
			d.checkOrders(sku, accepted(ss), false, &f)
			assert.Zero(t, f.extra, "every order taken was answered")
			d.verify(sku)
			f.more = []string{fmt.Sprintf("exit_ms=%d", exit.Milliseconds()), fmt.Sprintf("in_flight_at_sigterm=%d", len(held)),
				fmt.Sprintf("finished_before_exit=%d", finished), fmt.Sprintf("pending_at_restart=%d", len(waiting)),
				fmt.Sprintf("no_answer=%d", tally(ss)["no answer"]), fmt.Sprintf("retried_elsewhere=%d", retried(ss))}
			f.log(t)
			t.Logf("answers: %v", tally(ss))
		})
	}
}
