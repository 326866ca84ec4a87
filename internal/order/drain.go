package order

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/stock"
)

// DrainOptions configure a Drainer.
type DrainOptions struct {
	BatchSize       int           // orders per claim and per transaction; default 500
	Workers         int           // claiming workers per SKU queue; default 2
	Lease           time.Duration // lease of a claimed batch; default 30s
	SweepInterval   time.Duration // longest idle sleep, bounding recovery of expired leases; default 2s
	SKURefresh      time.Duration // how often to look for new SKUs; default 2s
	RetryBackoffMax time.Duration // cap of the back-off while SQL is unavailable; default 10s
	Waker           *queue.Waker  // wakes idle consumers when a task is enqueued; nil polls
	// Watch, when set, is told of every queue the drainer starts consuming
	// (for depth metrics), and Unwatch of every queue it stops consuming.
	Watch, Unwatch func(*queue.Queue)
}

// Drainer moves accepted orders from every SKU's queue into SQL and runs
// the payment deadlines. Any number of drainers may run in any number of
// processes: each batch is claimed by one of them at a time, and writing an
// order is idempotent.
type Drainer struct {
	svc *Service
	o   DrainOptions
	log *slog.Logger

	mu      sync.Mutex
	running map[uint64]context.CancelFunc
}

// Drainer returns a drainer for the service's SKUs.
func (s *Service) Drainer(o DrainOptions) *Drainer {
	if o.BatchSize <= 0 {
		o.BatchSize = 500
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.Lease <= 0 {
		o.Lease = 30 * time.Second
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = 2 * time.Second
	}
	if o.SKURefresh <= 0 {
		o.SKURefresh = 2 * time.Second
	}
	if o.RetryBackoffMax <= 0 {
		o.RetryBackoffMax = 10 * time.Second
	}
	return &Drainer{svc: s, o: o, log: s.o.Log, running: map[uint64]context.CancelFunc{}}
}

// Run drains until ctx is cancelled, then lets running batches finish (or
// hands them back to their queues) and returns. It runs a consumer for every
// SKU whose sale, plus its payment window, has not long ended, looks for new
// SKUs every SKURefresh, and stops the consumer of a SKU that dropped out of
// that list once its queue has nothing left to run (dead letters stay for
// an operator).
func (d *Drainer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(d.o.SKURefresh)
	defer t.Stop()
	for {
		since := d.svc.o.Now().Add(-d.svc.o.PaymentTimeout - time.Hour)
		skus, err := d.svc.skus.List(ctx, since)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("drain: list skus", "err", err.Error())
		}
		if err == nil {
			listed := make(map[uint64]bool, len(skus))
			for _, sku := range skus {
				listed[sku.ID] = true
				d.start(ctx, &wg, sku.ID)
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

func (d *Drainer) start(ctx context.Context, wg *sync.WaitGroup, sku uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running[sku] != nil {
		return
	}
	cctx, cancel := context.WithCancel(ctx)
	d.running[sku] = cancel
	q := d.svc.store.Queue(sku)
	if d.o.Watch != nil {
		d.o.Watch(q)
	}
	c := queue.NewConsumer(q, d.handle, queue.ConsumerOptions{
		Workers:   d.o.Workers,
		BatchSize: d.o.BatchSize,
		Lease:     d.o.Lease,
		MaxIdle:   d.o.SweepInterval,
		Waker:     d.o.Waker,
	})
	wg.Go(func() {
		if err := c.Run(cctx); err != nil {
			d.log.Error("drain: consumer stopped", "sku", sku, "err", err.Error())
		}
	})
}

// stopFinished stops the consumers of SKUs not listed any more whose queue
// has no task pending or in flight.
func (d *Drainer) stopFinished(ctx context.Context, listed map[uint64]bool) {
	d.mu.Lock()
	var gone []uint64
	for sku := range d.running {
		if !listed[sku] {
			gone = append(gone, sku)
		}
	}
	d.mu.Unlock()
	for _, sku := range gone {
		q := d.svc.store.Queue(sku)
		st, err := q.Stats(ctx)
		if err != nil || st.Due+st.Delayed+st.InFlight > 0 {
			continue
		}
		d.mu.Lock()
		cancel := d.running[sku]
		delete(d.running, sku)
		d.mu.Unlock()
		cancel()
		if d.o.Unwatch != nil {
			d.o.Unwatch(q)
		}
		d.svc.store.Forget(sku)
		d.log.Info("drain: sale over and drained; consumer stopped", "sku", sku)
	}
}

// handle is the queue handler: order.create tasks are written in one
// transaction, the orders of order.expire tasks one by one.
func (d *Drainer) handle(ctx context.Context, tasks []*queue.Claimed) []error {
	errs := make([]error, len(tasks))
	var creates []stock.OrderTask
	var createIdx []int
	for i, t := range tasks {
		switch t.Type {
		case stock.TaskCreate:
			ot, err := stock.DecodeTask(t.Payload)
			if err != nil {
				errs[i] = err // malformed: retried, then dead-lettered for an operator
				continue
			}
			creates = append(creates, ot)
			createIdx = append(createIdx, i)
		case TaskExpire:
		default:
			errs[i] = fmt.Errorf("order: unknown task type %q", t.Type)
		}
	}
	if len(creates) > 0 {
		err := d.retrySQL(ctx, func() error { return d.persist(ctx, creates) })
		for _, i := range createIdx {
			errs[i] = err
		}
	}
	for i, t := range tasks {
		if t.Type != TaskExpire {
			continue
		}
		// The order ids whose payment deadline this is, comma-separated.
		for _, orderID := range strings.Split(string(t.Payload), ",") {
			errs[i] = d.retrySQL(ctx, func() error {
				_, err := d.svc.close(ctx, orderID, StatusExpired, d.svc.o.Now())
				if errors.Is(err, ErrNotFound) {
					return nil
				}
				return err
			})
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
	delay := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", queue.ErrRelease, err)
		}
		d.svc.metrics.retried()
		if attempt == 1 || attempt%10 == 0 {
			d.log.Warn("drain: store unavailable, backing off", "attempt", attempt, "retry_in", delay.String(), "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", queue.ErrRelease, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, d.o.RetryBackoffMax)
	}
}

var errGuard = errors.New("order: stock guard refused the batch")

// persist writes the orders of one batch: in one transaction, the rows not
// yet written and one guarded increment of sold per SKU. When the guard
// refuses (SQL would oversell — Redis must have lost state), it falls back
// to one order at a time and marks the orders that do not fit failed, then
// rebuilds their SKU's Redis state from SQL, which frees their units. A
// batch delivered again after a rebuild that did not complete finds its
// failed rows written and runs the rebuild again. Then it schedules each
// order's payment deadline.
func (d *Drainer) persist(ctx context.Context, tasks []stock.OrderTask) error {
	now := d.svc.o.Now().UTC()
	rows := make([]Order, 0, len(tasks))
	for _, t := range tasks {
		rows = append(rows, d.row(t, now))
	}
	fresh, failed, err := d.insertGuarded(ctx, rows, now)
	refused := 0
	if errors.Is(err, errGuard) {
		fresh, refused, failed, err = d.insertOneByOne(ctx, rows, now)
	}
	if err != nil {
		return err
	}
	// A refusal means Redis and SQL disagree about the units left: Redis
	// took units SQL does not have (its state was lost and rebuilt while
	// this batch was in flight, or is wrong). Rebuilding the SKU from SQL
	// gives the failed orders' units back if Redis counted them, and adds
	// none if it never did.
	for sku := range failed {
		if _, err := d.svc.Reconcile(ctx, sku); err != nil {
			return err
		}
	}
	created := make([]time.Time, 0, len(fresh))
	for _, o := range fresh {
		created = append(created, o.CreatedAt)
	}
	d.svc.metrics.drained(len(fresh), refused, created, now)
	return d.scheduleDeadlines(ctx, rows)
}

func (d *Drainer) row(t stock.OrderTask, now time.Time) Order {
	created := time.UnixMilli(t.CreatedMS).UTC()
	o := Order{
		OrderID: t.OrderID, SKU: t.SKU, User: t.User, Qty: t.Qty, PriceCents: t.PriceCents,
		Status: StatusPendingPayment, Fence: t.Fence, CreatedAt: created, PersistedAt: now,
		ExpiresAt: created.Add(d.svc.o.PaymentTimeout), UpdatedAt: now,
	}
	if t.RequestID != "" {
		rid := t.RequestID
		o.RequestID = &rid
	}
	return o
}

// insertGuarded writes the rows not yet in SQL and counts their units in
// skus.sold, all or nothing; errGuard when a SKU has too few units left. It
// also returns the SKUs of rows already written as failed.
func (d *Drainer) insertGuarded(ctx context.Context, rows []Order, now time.Time) ([]Order, map[uint64]bool, error) {
	var fresh []Order
	var failed map[uint64]bool
	err := d.svc.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		fresh, failed, err = notWritten(tx, rows)
		if err != nil || len(fresh) == 0 {
			return err
		}
		if err := tx.CreateInBatches(&fresh, 1000).Error; err != nil {
			return err
		}
		units := map[uint64]int64{}
		for _, o := range fresh {
			units[o.SKU] += int64(o.Qty)
		}
		for sku, n := range units {
			if ok, err := addSold(tx, sku, n, now); err != nil || !ok {
				if err == nil {
					err = errGuard
				}
				return err
			}
		}
		return nil
	})
	return fresh, failed, err
}

// insertOneByOne writes each row in its own guarded transaction; a row the
// guard refuses is written with status failed. It returns the SKUs with
// failed rows in this batch (now or from an earlier attempt).
func (d *Drainer) insertOneByOne(ctx context.Context, rows []Order, now time.Time) (fresh []Order, refused int, failed map[uint64]bool, err error) {
	failed = map[uint64]bool{}
	for _, o := range rows {
		ok := false
		err := d.svc.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			todo, before, err := notWritten(tx, []Order{o})
			for sku := range before {
				failed[sku] = true
			}
			if err != nil || len(todo) == 0 {
				return err
			}
			if ok, err = addSold(tx, o.SKU, int64(o.Qty), now); err != nil {
				return err
			}
			if !ok {
				o.Status = StatusFailed
				o.ClosedAt = &now
			}
			return tx.Create(&o).Error
		})
		if err != nil {
			return fresh, refused, failed, err
		}
		if ok {
			fresh = append(fresh, o)
			continue
		}
		if o.Status == StatusFailed {
			refused++
			failed[o.SKU] = true
			d.log.Error("drain: stock guard refused an order; rebuilding the sku's redis state", "order_id", o.OrderID, "sku", o.SKU, "qty", o.Qty)
		}
	}
	return fresh, refused, failed, nil
}

// notWritten returns the rows whose order_id is not in SQL yet, and the
// SKUs of those written with status failed.
func notWritten(tx *gorm.DB, rows []Order) ([]Order, map[uint64]bool, error) {
	ids := make([]string, len(rows))
	for i, o := range rows {
		ids[i] = o.OrderID
	}
	var have []struct {
		OrderID string
		SKUID   uint64 `gorm:"column:sku_id"`
		Status  string
	}
	if err := tx.Model(&Order{}).Select("order_id, sku_id, status").Where("order_id IN ?", ids).Scan(&have).Error; err != nil {
		return nil, nil, err
	}
	if len(have) == 0 {
		return rows, nil, nil
	}
	seen := make(map[string]bool, len(have))
	var failed map[uint64]bool
	for _, h := range have {
		seen[h.OrderID] = true
		if h.Status == StatusFailed {
			if failed == nil {
				failed = map[uint64]bool{}
			}
			failed[h.SKUID] = true
		}
	}
	var out []Order
	for _, o := range rows {
		if !seen[o.OrderID] {
			out = append(out, o)
		}
	}
	return out, failed, nil
}

// addSold counts n more units sold of sku unless that would pass
// stock_total; false means refused.
func addSold(tx *gorm.DB, sku uint64, n int64, now time.Time) (bool, error) {
	res := tx.Exec("UPDATE skus SET sold = sold + ?, updated_at = ? WHERE id = ? AND sold + ? <= stock_total", n, now, sku, n)
	return res.RowsAffected == 1, res.Error
}

// scheduleDeadlines enqueues the payment deadlines of a batch's orders
// (enqueueing one again is a no-op; a deadline that finds its order paid
// does nothing).
func (d *Drainer) scheduleDeadlines(ctx context.Context, rows []Order) error {
	bySKU := map[uint64][]Order{}
	for _, o := range rows {
		bySKU[o.SKU] = append(bySKU[o.SKU], o)
	}
	for sku, os := range bySKU {
		if _, err := d.svc.store.Queue(sku).EnqueueBatch(ctx, deadlines(os)); err != nil {
			return fmt.Errorf("order: schedule payment deadlines: %w", err)
		}
	}
	return nil
}

// deadlines returns the tasks that expire orders (of one SKU) at their
// expires_at if they are still unpaid: one task per second of expiry, due
// at the latest deadline in it, so an unpaid order expires at most a second
// late and a drained batch — orders placed within moments of each other —
// costs one or two tasks instead of one per order. A task's id is its first
// order's, so the same orders give the same tasks again.
func deadlines(orders []Order) []queue.Task {
	var tasks []queue.Task
	index := map[int64]int{}
	for _, o := range orders {
		sec := o.ExpiresAt.Unix()
		i, ok := index[sec]
		if !ok {
			i = len(tasks)
			index[sec] = i
			tasks = append(tasks, queue.Task{ID: expirePfx + o.OrderID, Type: TaskExpire, Due: o.ExpiresAt})
		} else {
			tasks[i].Payload = append(tasks[i].Payload, ',')
		}
		t := &tasks[i]
		t.Payload = append(t.Payload, o.OrderID...)
		if o.ExpiresAt.After(t.Due) {
			t.Due = o.ExpiresAt
		}
	}
	return tasks
}
