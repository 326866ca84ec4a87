package drain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/stock"
)

// persist writes the orders of one batch (order.Store.Insert): in one
// transaction, the rows not yet written, their events and one guarded
// increment of sold per SKU. When the guard
// refuses (SQL would oversell — Redis must have lost state), it falls back
// to one order at a time and marks the orders that do not fit failed, then
// rebuilds their SKU's Redis state from SQL, which frees their units. A
// batch delivered again after a rebuild that did not complete finds its
// failed rows written and runs the rebuild again. Then it schedules each
// order's payment deadline.
func (d *Drainer) persist(ctx context.Context, p stock.Part, tasks []stock.OrderTask) error {
	now := d.o.Now().UTC()
	rows := make([]order.Order, 0, len(tasks))
	for _, t := range tasks {
		rows = append(rows, d.row(t, now))
	}
	fresh, failed, err := d.orders.Insert(ctx, rows, now)
	var refused []order.Order
	if errors.Is(err, order.ErrGuard) {
		fresh, refused, failed, err = d.orders.InsertOneByOne(ctx, rows, now)
	}
	if err != nil {
		return err
	}
	for _, o := range refused {
		d.log.Error("drain: stock guard refused an order; rebuilding the sku's redis state", "order_id", o.OrderID, "sku", o.SKU, "qty", o.Qty)
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
	d.o.Metrics.drained(len(fresh), len(refused), created, now)
	if d.o.Pace != nil {
		d.o.Pace.Add(len(fresh))
	}
	return d.scheduleDeadlines(ctx, p, rows)
}

func (d *Drainer) row(t stock.OrderTask, now time.Time) order.Order {
	return order.FromTask(t, d.o.PaymentTimeout, now)
}

// scheduleDeadlines enqueues the payment deadlines of a batch's orders in
// the queue of part p, which their orders came from, with the ack of the
// tasks they came in (enqueueing one again is a no-op; a deadline that finds
// its order paid does nothing).
func (d *Drainer) scheduleDeadlines(ctx context.Context, p stock.Part, rows []order.Order) error {
	if len(rows) == 0 {
		return nil
	}
	if err := d.store.Queue(p).EnqueueOnAck(ctx, order.Deadlines(rows)); err != nil {
		return fmt.Errorf("drain: schedule payment deadlines: %w", err)
	}
	return nil
}
