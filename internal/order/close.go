package order

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/stock"
)

// Closer closes orders: a shopper's cancel and a payment deadline's expiry.
// It needs no seller, so a process that only drains can run the deadlines.
type Closer struct {
	db      *gorm.DB
	rows    *Store
	store   *stock.Store
	parts   Parts
	gateway Gateway
	metrics *Metrics
	now     func() time.Time
	log     *slog.Logger
}

// CloserOptions configure a Closer; each may be left zero.
type CloserOptions struct {
	// Gateway, when set, is the payment provider whose payment of an
	// order closed unpaid is cancelled, and which refunds a paid order
	// support staff cancel.
	Gateway Gateway
	Metrics *Metrics
	Now     func() time.Time // time.Now by default
	Log     *slog.Logger
}

// NewCloser returns a Closer writing to rows and giving units back in
// store.
func NewCloser(rows *Store, store *stock.Store, parts Parts, o CloserOptions) *Closer {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Closer{db: rows.db, rows: rows, store: store, parts: parts, gateway: o.Gateway, metrics: o.Metrics, now: o.Now,
		log: cmp.Or(o.Log, slog.Default())}
}

// Parts finds the part of its SKU's stock an order was taken from
// (catalog.Cache).
type Parts interface {
	PartOf(ctx context.Context, sku uint64, orderID string) (stock.Part, error)
}

// Expire expires the order if it is still unpaid at due; an order that is
// gone, paid or closed is left as it is.
func (c *Closer) Expire(ctx context.Context, orderID string, due time.Time) error {
	_, err := c.Close(ctx, orderID, StatusExpired, due)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Close moves a pending order to status to (cancelled or expired), takes
// its units off skus.sold and writes its event in one transaction, then has
// the provider's payment opened for it cancelled (with a Gateway) and gives
// its units back in Redis (once per order). With a non-zero due, only an order whose deadline is at
// or before due is expired. It returns the order as it ends up; an order
// already cancelled or expired has its units given back again (a no-op
// unless an earlier call stopped between SQL and Redis).
func (c *Closer) Close(ctx context.Context, orderID, to string, due time.Time) (*Order, error) {
	now := c.now().UTC()
	var o Order
	lost, changed := false, false
	err := c.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Take(&o, "order_id = ?", orderID).Error; err != nil {
			return err
		}
		if o.Status != StatusPendingPayment || (!due.IsZero() && o.ExpiresAt.After(due)) {
			return nil
		}
		res := tx.Model(&Order{}).Where("id = ? AND status = ?", o.ID, StatusPendingPayment).
			Updates(map[string]any{"status": to, "closed_at": now, "updated_at": now})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			// Paid or closed by someone else meanwhile. A read in this
			// transaction would still see its old snapshot: read after.
			lost = true
			return nil
		}
		if err := catalog.SubtractSold(tx, o.SKU, int64(o.Qty), now); err != nil {
			return err
		}
		changed = true
		o.Status, o.ClosedAt, o.UpdatedAt = to, &now, now
		return c.rows.event(tx, closedEvent(to), &supportRow{Order: o}, now)
	})
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("order: %s %s: %w", to, orderID, err)
	}
	if changed {
		c.voidOpen(ctx, orderID)
	}
	if lost {
		cur, err := find(ctx, c.db, orderID)
		if err != nil {
			return nil, err
		}
		o = *cur
	}
	if o.Status == StatusCancelled || o.Status == StatusExpired {
		// Also for an order closed before (by the other status, or by a
		// call that stopped between SQL and Redis): the payment deadline
		// runs this for every order, so units never stay taken for good.
		// Returning them announces it to every instance's seller.
		p, err := c.parts.PartOf(ctx, o.SKU, o.OrderID)
		if err != nil {
			return nil, err
		}
		returned, err := c.store.ReturnWhenFree(context.WithoutCancel(ctx), p, o.OrderID, o.User, o.Qty, stock.ReturnClosed)
		if err != nil {
			return nil, err
		}
		if returned {
			c.metrics.closed(to)
		}
	}
	return &o, nil
}
