package order

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/outbox"
	"github.com/seckill/seckill/internal/stock"
)

// Support staff find any order and cancel it by hand, a paid one included:
// the shop then owes the shopper a refund.

// Refunds an order owes (AdminView.Refund), besides RefundIssued.
const (
	RefundNone = "none"
	RefundDue  = "due" // cancelled by support staff after it was paid
)

// MaxReasonLen is the longest reason for a cancel by support staff, in
// characters.
const MaxReasonLen = 500

// AdminView is what support staff see of an order: what its shopper sees,
// when it was paid and closed, why staff cancelled it, and whether the shop
// owes the shopper a refund.
type AdminView struct {
	View
	PaidAt       *time.Time `json:"paid_at,omitempty"`
	ClosedAt     *time.Time `json:"closed_at,omitempty"`
	CancelReason *string    `json:"cancel_reason,omitempty"`
	Refund       string     `json:"refund"`
	// RefundID is the provider's refund of an issued refund.
	RefundID *string `json:"refund_id,omitempty"`
	// RefundError is why the provider refused a refund that is still due.
	RefundError *string `json:"refund_error,omitempty"`
}

// supportRow is a row of orders with the columns only support staff write
// and read; Order leaves them out, so the drain's inserts do too.
type supportRow struct {
	Order
	CancelReason  *string `gorm:"column:cancel_reason"`
	Refund        *string `gorm:"column:refund"`
	PaymentIntent *string `gorm:"column:payment_intent"`
	RefundID      *string `gorm:"column:refund_id"`
	RefundError   *string `gorm:"column:refund_error"`
}

// paymentReference is the order's payment reference.
func (r *supportRow) paymentReference() string {
	ref, _ := orderid.Reference(r.OrderID)
	return ref
}

// TableName is orders.
func (supportRow) TableName() string { return "orders" }

// adminView returns what support staff see of the row.
func (r *supportRow) adminView() AdminView {
	v := AdminView{View: *r.View(), PaidAt: utc(r.PaidAt), ClosedAt: utc(r.ClosedAt),
		CancelReason: r.CancelReason, Refund: RefundNone}
	if r.Refund != nil && (*r.Refund == RefundDue || *r.Refund == RefundIssued) {
		v.Refund = *r.Refund
		v.RefundID, v.RefundError = r.RefundID, r.RefundError
	}
	return v
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// queuedView is what support staff see of an order still in its SKU's
// queue.
func (s *Service) queuedView(t stock.OrderTask) AdminView {
	return AdminView{View: s.taskView(t), Refund: RefundNone}
}

// SupportGet returns any order, whoever bought it: from SQL once it is
// there, from its SKU's queue (status queued) before. Errors: ErrNotFound
// for a malformed or unknown id.
func (s *Service) SupportGet(ctx context.Context, orderID string) (*AdminView, error) {
	if _, _, _, ok := orderid.Parse(orderID); !ok {
		return nil, fmt.Errorf("%w: malformed order id", ErrNotFound)
	}
	r, err := take[supportRow](ctx, s.db, orderID)
	if err == nil {
		v := r.adminView()
		return &v, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	// Not in SQL yet: in the queue of the part its SKU's layout names.
	part, batch, err := s.partOf(ctx, orderID)
	if err != nil {
		return nil, err
	}
	t, err := s.queued(ctx, part, batch, orderID)
	if errors.Is(err, ErrNotFound) {
		// The drain may have moved it between the two reads.
		if r, err2 := take[supportRow](ctx, s.db, orderID); err2 == nil {
			v := r.adminView()
			return &v, nil
		}
	}
	if err != nil {
		return nil, err
	}
	v := s.queuedView(t)
	return &v, nil
}

// CleanReason returns the reason for a cancel by support staff trimmed of
// surrounding white space: 1 to MaxReasonLen characters, without control
// characters other than tab and line breaks. The error wraps ErrInvalid.
func CleanReason(reason string) (string, error) {
	r := strings.TrimSpace(reason)
	switch {
	case r == "":
		return "", fmt.Errorf("%w: reason is required: say why the order is cancelled", ErrInvalid)
	case utf8.RuneCountInString(r) > MaxReasonLen:
		return "", fmt.Errorf("%w: reason must be at most %d characters", ErrInvalid, MaxReasonLen)
	case strings.ContainsFunc(r, func(c rune) bool { return unicode.IsControl(c) && c != '\t' && c != '\n' && c != '\r' }):
		return "", fmt.Errorf("%w: reason must not hold control characters other than tab and line breaks", ErrInvalid)
	}
	return r, nil
}

// SupportCancel cancels a pending or paid order by hand, keeping reason
// with it, and gives its units back once, as a shopper's cancel does. A paid
// order then owes its shopper a refund (RefundDue), written with the reason
// and the status in one transaction; with a Gateway, the provider refunds
// it then (RefundIssued), or the refund stays due with the provider's
// reason, and is tried again by the same cancel sent again. Cancelling a cancelled order again
// returns it unchanged (the first reason stays). Errors: ErrInvalid (the
// reason, see CleanReason), ErrNotFound, ErrQueued (not in SQL yet),
// ErrClosed (expired or failed).
func (s *Service) SupportCancel(ctx context.Context, orderID, reason string) (*AdminView, error) {
	reason, err := CleanReason(reason)
	if err != nil {
		return nil, err
	}
	if _, _, _, ok := orderid.Parse(orderID); !ok {
		return nil, fmt.Errorf("%w: malformed order id", ErrNotFound)
	}
	r, changed, err := s.closer.cancelBySupport(ctx, orderID, reason)
	if errors.Is(err, ErrNotFound) {
		r, changed, err = s.cancelUnwritten(ctx, orderID, reason)
	}
	if err != nil {
		return nil, err
	}
	if changed {
		s.o.Log.WarnContext(ctx, "order cancelled by support", "order_id", orderID, "reason", reason, "refund", r.adminView().Refund)
		if r.Refund == nil {
			s.closer.voidOpen(ctx, orderID)
		}
	}
	if r.Refund != nil && *r.Refund == RefundDue && s.closer.gateway != nil {
		// Also on a cancel sent again: a refund the provider refused, or
		// could not be asked for, is tried again (once per order, by its
		// key).
		if err := s.closer.refund(ctx, r); err != nil {
			return nil, err
		}
	}
	v := r.adminView()
	switch r.Status {
	case StatusCancelled:
		if err := s.closer.giveBack(ctx, &r.Order); err != nil {
			return nil, err
		}
		return &v, nil
	case StatusExpired, StatusFailed:
		return nil, ErrClosed
	default:
		// Open, yet the update missed it: the drain wrote it a moment ago,
		// and a retry cancels it.
		return nil, ErrQueued
	}
}

// cancelUnwritten is SupportCancel of an order that SQL did not have: one
// still queued is ErrQueued, one the drain wrote since is cancelled now.
func (s *Service) cancelUnwritten(ctx context.Context, orderID, reason string) (*supportRow, bool, error) {
	v, err := s.SupportGet(ctx, orderID)
	if err != nil {
		return nil, false, err
	}
	if v.Status == StatusQueued {
		return nil, false, ErrQueued
	}
	return s.closer.cancelBySupport(ctx, orderID, reason)
}

// cancelBySupport cancels the order if it is pending or paid, with reason,
// owing a refund if it was paid, takes its units off skus.sold and writes
// its event, in one transaction. The update is conditional on the status, so a payment or an
// expiry that commits first is never lost: a payment makes the refund due,
// an expiry leaves the order expired. It returns the row as it ends up and
// whether this call cancelled it; ErrNotFound when SQL has no such order.
func (c *Closer) cancelBySupport(ctx context.Context, orderID, reason string) (*supportRow, bool, error) {
	now := c.now().UTC()
	var r supportRow
	changed := false
	err := c.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&supportRow{}).Where("order_id = ? AND status IN ?", orderID, []string{StatusPendingPayment, StatusPaid}).
			Updates(map[string]any{
				"status": StatusCancelled, "cancel_reason": reason, "closed_at": now, "updated_at": now,
				// paid_at is set exactly when a pending order is paid, and the
				// update leaves it: unlike status, it reads the same before and
				// after the assignments, in whatever order they run.
				"refund": gorm.Expr("CASE WHEN paid_at IS NULL THEN NULL ELSE ? END", RefundDue),
			})
		if res.Error != nil || res.RowsAffected != 1 {
			return res.Error
		}
		changed = true
		if err := tx.Take(&r, "order_id = ?", orderID).Error; err != nil {
			return err
		}
		if err := catalog.SubtractSold(tx, r.SKU, int64(r.Qty), now); err != nil {
			return err
		}
		return c.rows.event(tx, outbox.OrderCancelled, &r, now)
	})
	if err != nil {
		return nil, false, fmt.Errorf("order: cancel %s by support: %w", orderID, err)
	}
	if !changed {
		// Not open, or not in SQL: read it as it is now.
		cur, err := take[supportRow](ctx, c.db, orderID)
		if err != nil {
			return nil, false, err
		}
		r = *cur
	}
	return &r, changed, nil
}

// giveBack gives a closed order's units back in Redis, once per order
// however often it is called (as Close does), and counts the transition the
// call that gives them back.
func (c *Closer) giveBack(ctx context.Context, o *Order) error {
	p, err := c.parts.PartOf(ctx, o.SKU, o.OrderID)
	if err != nil {
		return err
	}
	returned, err := c.store.ReturnWhenFree(context.WithoutCancel(ctx), p, o.OrderID, o.User, o.Qty, stock.ReturnClosed)
	if err != nil {
		return err
	}
	if returned {
		c.metrics.closed(o.Status)
	}
	return nil
}
