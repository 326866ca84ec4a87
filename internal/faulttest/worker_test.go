package faulttest

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/testutil"
)

// TestWorkerStalledPastLease stops a worker-only process (SIGSTOP) while its
// batch is inside its MySQL transaction, past the end of the batch's lease.
// The queue takes the batch back and a second worker claims it; when the
// first one is continued it commits, its ack is refused as stale, and the
// second worker's insert finds the orders written: each order is in MySQL
// once and counted once in sold.
func TestWorkerStalledPastLease(t *testing.T) {
	testutil.SkipShort(t, "starts seckill processes")
	d := sharedDeployment(t, nil)
	d.serve("api", "serve", "--api-only")
	const total, buyers = 100, 60
	sku := d.seed(total)
	c := d.buy(sku, "stall", buyers, 300)
	c.Wait()

	// The worker claims every order (two batches) and blocks in both
	// transactions.
	release := d.holdSKURow(sku)
	w1 := d.worker("worker-1", nil)
	d.waitBlockedBatch(sku)
	claimed := time.Now().Add(20 * time.Second)
	for in, pending := d.queueLen(sku); pending > 0 || in < buyers; in, pending = d.queueLen(sku) {
		require.True(t, time.Now().Before(claimed), "worker-1 holds %d of %d orders after 20s", in, buyers)
		time.Sleep(10 * time.Millisecond)
	}
	held := d.inflightTasks(sku)
	heldOrders := len(d.ordersOf(sku, held))
	q, err := queue.New(d.rdb, stock.Tag(sku), queue.Options{Prefix: d.prefix})
	require.NoError(t, err)
	claims := map[string]int{}
	for _, id := range held {
		info, err := q.Inspect(t.Context(), id)
		require.NoError(t, err)
		claims[id] = info.Attempts
	}

	w1.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	// The blocked statement goes on in MySQL; the stopped worker's
	// transaction stays open, holding its rows.
	release()
	// Enough workers that each recovered batch finds one free while the
	// earlier ones wait for the stalled transaction's row locks (recovery
	// happens in claims).
	d.worker("worker-2", map[string]string{"SECKILL_WORKER_CONCURRENCY": "16"})

	// Wait until every held task is out of the stalled worker's hands: its
	// lease expired and the queue took it back (pending again, or claimed
	// by the second worker, whose batches then wait for the stalled
	// transaction's row locks).
	deadline := time.Now().Add(30 * time.Second)
	for {
		again := 0
		for _, id := range held {
			info, err := q.Inspect(t.Context(), id)
			if err != nil || info.State != queue.StateInFlight || info.Attempts > claims[id] {
				again++
			}
		}
		if again == len(held) {
			break
		}
		require.True(t, time.Now().Before(deadline), "only %d of %d stalled tasks recovered in 30s", again, len(held))
		time.Sleep(50 * time.Millisecond)
	}
	recovered := time.Since(stopped)
	time.Sleep(time.Second)
	w1.Signal(syscall.SIGCONT)
	continued := time.Now()

	ss := c.Wait()
	rep := d.drained(sku, 60*time.Second)
	took := time.Since(continued)
	assert.Zero(t, rep.DeadLetters)
	f := figures{scenario: "worker-stalled-past-lease", recovered: heldOrders, recoverMS: recovered.Milliseconds()}
	d.checkOrders(sku, accepted(ss), false, &f)
	assert.Equal(t, int64(len(accepted(ss))), rep.Sold, "sold counts each order once")
	d.verify(sku)
	f.more = []string{fmt.Sprintf("stalled_ms=%d", continued.Sub(stopped).Milliseconds()),
		fmt.Sprintf("drained_ms_after_continue=%d", took.Milliseconds()),
		fmt.Sprintf("stale_acks_logged=%d", w1.LogCount("ack incomplete"))}
	f.log(t)
}
