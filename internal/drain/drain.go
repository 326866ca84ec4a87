// Package drain moves accepted orders from every SKU's queue into SQL and
// runs their payment deadlines.
//
// The guarantee: every order accepted with a 202 reaches SQL exactly once —
// its task is enqueued in the same script that takes the stock, the queue
// delivers it at least once, the insert is idempotent on order_id, and the
// SQL update that counts a sale refuses to pass stock_total
// (catalog.AddSold), so even a Redis that lost its data cannot make SQL
// oversell.
package drain

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/stock"
)

// Options configure a Drainer.
type Options struct {
	BatchSize       int           // tasks per claim, and orders per transaction; default 500
	Workers         int           // claiming workers per SKU queue; default 2
	Lease           time.Duration // lease of a claimed batch; default 30s
	SweepInterval   time.Duration // longest idle sleep, bounding recovery of expired leases; default 2s
	SKURefresh      time.Duration // how often to look for new SKUs; default 2s
	RetryBackoffMax time.Duration // cap of the back-off while SQL is unavailable; default 10s
	Waker           *queue.Waker  // wakes idle consumers when a task is enqueued; nil polls
	// Watch, when set, is told of every queue the drainer starts consuming
	// (for depth metrics), and Unwatch of every queue it stops consuming.
	Watch, Unwatch func(*queue.Queue)

	// PaymentTimeout is how long an order waits for payment; zero means
	// order.DefaultPaymentTimeout.
	PaymentTimeout time.Duration
	Now            func() time.Time
	Log            *slog.Logger
	Metrics        *Metrics
	// Pace, when set, is told how many orders each batch persisted
	// (internal/pace).
	Pace Counter
}

// Counter counts persisted orders (pace.Pace).
type Counter interface {
	Add(n int)
}

// Expirer expires an order still unpaid at due (internal/order's Closer).
type Expirer interface {
	Expire(ctx context.Context, orderID string, due time.Time) error
}

// Rebuilder rebuilds a SKU's Redis state from SQL (internal/sale's
// Service).
type Rebuilder interface {
	Rebuild(ctx context.Context, sku uint64) error
}

// Drainer moves accepted orders from every SKU's queue into SQL and runs
// the payment deadlines. Any number of drainers may run in any number of
// processes: each batch is claimed by one of them at a time, and writing an
// order is idempotent.
type Drainer struct {
	orders  *order.Store
	skus    *catalog.Store
	store   *stock.Store
	expirer Expirer
	rebuild Rebuilder
	o       Options
	log     *slog.Logger

	mu      sync.Mutex
	running map[stock.Part]*consumerRun
}

// New returns a drainer of the SKUs in skus, writing to orders: payment
// deadlines go to expirer, and a SKU whose orders SQL's guard refuses is
// rebuilt by rebuild.
func New(orders *order.Store, skus *catalog.Store, store *stock.Store, expirer Expirer, rebuild Rebuilder, o Options) *Drainer {
	o.BatchSize = cmp.Or(o.BatchSize, 500)
	o.Workers = cmp.Or(o.Workers, 2)
	o.Lease = cmp.Or(o.Lease, 30*time.Second)
	o.SweepInterval = cmp.Or(o.SweepInterval, 2*time.Second)
	o.SKURefresh = cmp.Or(o.SKURefresh, 2*time.Second)
	o.RetryBackoffMax = cmp.Or(o.RetryBackoffMax, 10*time.Second)
	o.PaymentTimeout = cmp.Or(o.PaymentTimeout, order.DefaultPaymentTimeout)
	o.Log = cmp.Or(o.Log, slog.Default())
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Drainer{orders: orders, skus: skus, store: store, expirer: expirer, rebuild: rebuild, o: o, log: o.Log,
		running: map[stock.Part]*consumerRun{}}
}

// Run drains until ctx is cancelled, then lets running batches finish (or
// hands them back to their queues) and returns. It runs a consumer for the
// queue of every bucket of every SKU whose sale, plus its payment window,
// has not long ended, looks for new SKUs every SKURefresh, and stops the
// consumer of a SKU that dropped out of that list once its queue has
// nothing left to run (dead letters stay for an operator).
func (d *Drainer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(d.o.SKURefresh)
	defer t.Stop()
	for {
		since := d.o.Now().Add(-d.o.PaymentTimeout - time.Hour)
		skus, err := d.skus.List(ctx, since)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("drain: list skus", "err", err.Error())
		}
		if err == nil {
			listed := make(map[stock.Part]bool, len(skus))
			for _, sku := range skus {
				for _, p := range sku.Layout().Parts() {
					listed[p] = true
					d.start(ctx, &wg, p)
				}
			}
			d.stopFinished(ctx, listed)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (d *Drainer) start(ctx context.Context, wg *sync.WaitGroup, p stock.Part) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running[p] != nil {
		return
	}
	cctx, cancel := context.WithCancel(ctx)
	run := &consumerRun{cancel: cancel}
	d.running[p] = run
	q := d.store.Queue(p)
	if d.o.Watch != nil {
		d.o.Watch(q)
	}
	handle := func(ctx context.Context, tasks []*queue.Claimed) []error { return d.handle(ctx, p, tasks) }
	c := queue.NewConsumer(q, handle, queue.ConsumerOptions{
		Workers:   d.o.Workers,
		BatchSize: d.o.BatchSize,
		Lease:     d.o.Lease,
		MaxIdle:   d.o.SweepInterval,
		Waker:     d.o.Waker,
	})
	wg.Go(func() {
		err := c.Run(cctx)
		if err == nil || cctx.Err() != nil {
			return
		}
		// Stopped by a failure of its own (its wake-up subscription could
		// not be set up, say): the next SKU refresh starts it again, so a
		// passing fault never leaves a SKU's orders undrained.
		d.log.Error("drain: consumer stopped; it restarts at the next sku refresh", "sku", p.SKU, "bucket", p.Bucket, "err", err.Error())
		d.mu.Lock()
		if d.running[p] == run {
			delete(d.running, p)
			if d.o.Unwatch != nil {
				d.o.Unwatch(q)
			}
		}
		d.mu.Unlock()
		cancel()
	})
}

// consumerRun is one running consumer of a SKU's queue.
type consumerRun struct{ cancel context.CancelFunc }

// stopFinished stops the consumers of SKUs not listed any more whose queue
// has no task pending or in flight.
func (d *Drainer) stopFinished(ctx context.Context, listed map[stock.Part]bool) {
	d.mu.Lock()
	var gone []stock.Part
	for p := range d.running {
		if !listed[p] {
			gone = append(gone, p)
		}
	}
	d.mu.Unlock()
	for _, p := range gone {
		q := d.store.Queue(p)
		st, err := q.Stats(ctx)
		if err != nil || st.Due+st.Delayed+st.InFlight > 0 {
			continue
		}
		d.mu.Lock()
		run := d.running[p]
		delete(d.running, p)
		d.mu.Unlock()
		if run != nil {
			run.cancel()
		}
		if d.o.Unwatch != nil {
			d.o.Unwatch(q)
		}
		d.store.Forget(p)
		d.log.Info("drain: sale over and drained; consumer stopped", "sku", p.SKU, "bucket", p.Bucket)
	}
}

// handle is the handler of part p's queue: the orders of every
// order.create task claimed are written in one transaction, those of
// order.expire tasks one by one.
func (d *Drainer) handle(ctx context.Context, p stock.Part, tasks []*queue.Claimed) []error {
	errs := make([]error, len(tasks))
	var creates []stock.OrderTask
	var createIdx []int
	for i, t := range tasks {
		switch t.Type {
		case stock.TaskCreate:
			// An order that does not decode fails its task (retried, then
			// dead-lettered for an operator); the others of its batch are
			// written all the same, and writing them again is a no-op.
			orders, err := stock.DecodeOrders(t.Payload)
			errs[i] = err
			creates = append(creates, orders...)
			if len(orders) > 0 {
				createIdx = append(createIdx, i)
			}
		case order.TaskExpire:
		default:
			errs[i] = fmt.Errorf("drain: unknown task type %q", t.Type)
		}
	}
	if len(creates) > 0 {
		var err error
		for start := 0; start < len(creates) && err == nil; start += d.o.BatchSize {
			chunk := creates[start:min(start+d.o.BatchSize, len(creates))]
			err = d.retrySQL(ctx, func() error { return d.persist(ctx, p, chunk) })
		}
		for _, i := range createIdx {
			if err != nil {
				errs[i] = err
			}
		}
	}
	for i, t := range tasks {
		if t.Type != order.TaskExpire {
			continue
		}
		// The order ids whose payment deadline this is, comma-separated.
		for _, orderID := range strings.Split(string(t.Payload), ",") {
			errs[i] = d.retrySQL(ctx, func() error { return d.expirer.Expire(ctx, orderID, d.o.Now()) })
			if errs[i] != nil {
				break
			}
		}
	}
	return errs
}

// retrySQL runs f until it succeeds, backing off while it fails: a store
// that is briefly down delays the drain but never dead-letters an order. When
// ctx ends it gives the tasks back to the queue without counting an attempt.
func (d *Drainer) retrySQL(ctx context.Context, f func() error) error {
	schedule := backoff.Exponential{Min: 50 * time.Millisecond, Max: d.o.RetryBackoffMax}
	for attempt := 1; ; attempt++ {
		delay := schedule.Delay(attempt - 1)
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", queue.ErrRelease, err)
		}
		d.o.Metrics.retried()
		if attempt == 1 || attempt%10 == 0 {
			d.log.Warn("drain: store unavailable, backing off", "attempt", attempt, "retry_in", delay.String(), "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", queue.ErrRelease, ctx.Err())
		case <-time.After(delay):
		}
	}
}
