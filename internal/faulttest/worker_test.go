package faulttest

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/stock"
)

// TestWorkerStalledPastLease stops a worker-only process (SIGSTOP) while its
// batch is inside its MySQL transaction, past the end of the batch's lease.
// A second worker recovers the batch and writes it; when the first one is
// continued its late commit and ack change nothing more: each order is in
// MySQL once and counted once in sold.
func TestWorkerStalledPastLease(t *testing.T) {
	if testing.Short() {
		t.Skip("starts seckill processes")
	}
	d := sharedDeployment(t, nil)
	d.serve("api", "serve", "--api-only")
	w1 := d.worker("worker-1")
	const total, buyers = 100, 60
	sku := d.seed(total)

	release := d.holdSKURow(sku)
	c := d.buy(sku, "stall", buyers, 300)
	d.waitBlockedBatch(sku)
	c.Wait()
	held := d.inflightIDs(sku)
	q, err := queue.New(d.rdb, stock.Tag(sku), queue.Options{Prefix: d.prefix})
	require.NoError(t, err)
	claims := map[string]int{}
	for _, id := range held {
		info, err := q.Inspect(context.Background(), id)
		require.NoError(t, err)
		claims[id] = info.Attempts
	}

	w1.signal(syscall.SIGSTOP)
	stopped := time.Now()
	// The blocked statement goes on in MySQL; the stopped worker's
	// transaction stays open, holding its rows.
	release()
	d.worker("worker-2")

	// Wait until the second worker has claimed every held task again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		again := 0
		for _, id := range held {
			info, err := q.Inspect(context.Background(), id)
			if err != nil || info.Attempts > claims[id] {
				again++ // claimed again, or already acked
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
	w1.signal(syscall.SIGCONT)
	continued := time.Now()

	ss := c.Wait()
	rep := d.drained(sku, 60*time.Second)
	took := time.Since(continued)
	assert.Zero(t, rep.DeadLetters)
	f := figures{scenario: "worker-stalled-past-lease", recovered: len(held), recoverMS: recovered.Milliseconds()}
	d.checkOrders(sku, accepted(ss), false, &f)
	assert.Equal(t, int64(len(accepted(ss))), rep.Sold, "sold counts each order once")
	d.verify(sku)
	f.more = []string{fmt.Sprintf("stalled_ms=%d", continued.Sub(stopped).Milliseconds()),
		fmt.Sprintf("drained_ms_after_continue=%d", took.Milliseconds()),
		fmt.Sprintf("stale_acks_logged=%d", w1.logCount("ack incomplete"))}
	f.log(t)
}
