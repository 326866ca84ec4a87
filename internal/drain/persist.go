package drain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/stock"
)

var errGuard = errors.New("drain: stock guard refused the batch")

// persist writes the orders of one batch: in one transaction, the rows not
// yet written and one guarded increment of sold per SKU. When the guard
// refuses (SQL would oversell — Redis must have lost state), it falls back
// to one order at a time and marks the orders that do not fit failed, then
// rebuilds their SKU's Redis state from SQL, which frees their units. A
// batch delivered again after a rebuild that did not complete finds its
// failed rows written and runs the rebuild again. Then it schedules each
// order's payment deadline.
func (d *Drainer) persist(ctx context.Context, tasks []stock.OrderTask) error {
	now := d.o.Now().UTC()
	rows := make([]order.Order, 0, len(tasks))
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
		if err := d.rebuild.Rebuild(ctx, sku); err != nil {
			return err
		}
	}
	created := make([]time.Time, 0, len(fresh))
	for _, o := range fresh {
		created = append(created, o.CreatedAt)
	}
	d.o.Metrics.drained(len(fresh), refused, created, now)
	return d.scheduleDeadlines(ctx, rows)
}

func (d *Drainer) row(t stock.OrderTask, now time.Time) order.Order {
	created := time.UnixMilli(t.CreatedMS).UTC()
	o := order.Order{
		OrderID: t.OrderID, SKU: t.SKU, User: t.User, Qty: t.Qty, PriceCents: t.PriceCents,
		Status: order.StatusPendingPayment, Fence: t.Fence, CreatedAt: created, PersistedAt: now,
		ExpiresAt: created.Add(d.o.PaymentTimeout), UpdatedAt: now,
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
//
// A batch is almost always delivered once, so it is first written without
// asking SQL which rows it has. A batch delivered again (written, then not
// acked) fails on order_id's unique key and rolls back; that, or any other
// error, sends it the careful way: the rows SQL has are read first.
func (d *Drainer) insertGuarded(ctx context.Context, rows []order.Order, now time.Time) ([]order.Order, map[uint64]bool, error) {
	err := d.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return insertCounted(tx, rows, now)
	})
	if err == nil || errors.Is(err, errGuard) {
		return rows, nil, err
	}
	var fresh []order.Order
	var failed map[uint64]bool
	err = d.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		fresh, failed, err = notWritten(tx, rows)
		if err != nil || len(fresh) == 0 {
			return err
		}
		return insertCounted(tx, fresh, now)
	})
	return fresh, failed, err
}

// insertCounted inserts rows and adds their units to their SKUs' sold;
// errGuard when a SKU has too few units left. The rows keep no id of an
// insert that may yet roll back.
func insertCounted(tx *gorm.DB, rows []order.Order, now time.Time) error {
	batch := slices.Clone(rows)
	if err := tx.CreateInBatches(&batch, 1000).Error; err != nil {
		return err
	}
	units := map[uint64]int64{}
	for _, o := range rows {
		units[o.SKU] += int64(o.Qty)
	}
	for sku, n := range units {
		if ok, err := catalog.AddSold(tx, sku, n, now); err != nil || !ok {
			if err == nil {
				err = errGuard
			}
			return err
		}
	}
	return nil
}

// insertOneByOne writes each row in its own guarded transaction; a row the
// guard refuses is written with status failed. It returns the SKUs with
// failed rows in this batch (now or from an earlier attempt).
func (d *Drainer) insertOneByOne(ctx context.Context, rows []order.Order, now time.Time) (fresh []order.Order, refused int, failed map[uint64]bool, err error) {
	failed = map[uint64]bool{}
	for _, o := range rows {
		ok := false
		err := d.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			todo, before, err := notWritten(tx, []order.Order{o})
			for sku := range before {
				failed[sku] = true
			}
			if err != nil || len(todo) == 0 {
				return err
			}
			if ok, err = catalog.AddSold(tx, o.SKU, int64(o.Qty), now); err != nil {
				return err
			}
			if !ok {
				o.Status = order.StatusFailed
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
		if o.Status == order.StatusFailed {
			refused++
			failed[o.SKU] = true
			d.log.Error("drain: stock guard refused an order; rebuilding the sku's redis state", "order_id", o.OrderID, "sku", o.SKU, "qty", o.Qty)
		}
	}
	return fresh, refused, failed, nil
}

// notWritten returns the rows whose order_id is not in SQL yet, and the
// SKUs of those written with status failed.
func notWritten(tx *gorm.DB, rows []order.Order) ([]order.Order, map[uint64]bool, error) {
	ids := make([]string, len(rows))
	for i, o := range rows {
		ids[i] = o.OrderID
	}
	var have []struct {
		OrderID string
		SKUID   uint64 `gorm:"column:sku_id"`
		Status  string
	}
	if err := tx.Model(&order.Order{}).Select("order_id, sku_id, status").Where("order_id IN ?", ids).Scan(&have).Error; err != nil {
		return nil, nil, err
	}
	if len(have) == 0 {
		return rows, nil, nil
	}
	seen := make(map[string]bool, len(have))
	var failed map[uint64]bool
	for _, h := range have {
		seen[h.OrderID] = true
		if h.Status == order.StatusFailed {
			if failed == nil {
				failed = map[uint64]bool{}
			}
			failed[h.SKUID] = true
		}
	}
	var out []order.Order
	for _, o := range rows {
		if !seen[o.OrderID] {
			out = append(out, o)
		}
	}
	return out, failed, nil
}

// scheduleDeadlines enqueues the payment deadlines of a batch's orders
// (enqueueing one again is a no-op; a deadline that finds its order paid
// does nothing).
func (d *Drainer) scheduleDeadlines(ctx context.Context, rows []order.Order) error {
	// In the queue of the bucket each order was taken from.
	byPart := map[stock.Part][]order.Order{}
	for _, o := range rows {
		p := stock.PartOf(o.SKU, o.OrderID)
		byPart[p] = append(byPart[p], o)
	}
	for p, os := range byPart {
		if _, err := d.store.Queue(p).EnqueueBatch(ctx, order.Deadlines(os)); err != nil {
			return fmt.Errorf("drain: schedule payment deadlines: %w", err)
		}
	}
	return nil
}
