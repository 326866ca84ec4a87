package order

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"gorm.io/gorm"
)

// A payment provider seckill calls itself (payment.mode stripe) opens a
// payment for an order at the checkout, has it cancelled when the order
// closes unpaid, and refunds a paid order that support staff cancel. Its
// notification pays the order as any mode's does (ApplyPayment).

// Gateway is the payment provider's API, as the order lifecycle needs it.
// Every call is idempotent: Open by the order's reference, Void of a
// cancelled payment, Refund by its key.
type Gateway interface {
	// Open opens the provider's payment for c, or returns the one opened
	// before: c.PaymentID when the order has one, else the one the
	// provider keeps under c.Reference.
	Open(ctx context.Context, c Charge) (Opened, error)
	// Void cancels payment paymentID, so that it can no longer be paid.
	Void(ctx context.Context, paymentID string) error
	// Refund refunds payment paymentID whole, once per key, and returns
	// the provider's refund id. A *RefusedError when the provider refuses.
	Refund(ctx context.Context, paymentID, key string) (string, error)
}

// Charge is what to open a payment for.
type Charge struct {
	OrderID     string
	Reference   string // the order's payment reference: the idempotency key
	AmountCents int64
	Currency    string
	PaymentID   string // the payment opened before, if any
}

// Opened is a payment the provider opened.
type Opened struct {
	PaymentID    string
	ClientSecret string // what the shop's checkout completes the payment with
}

// ErrProvider is a payment provider that could not be reached or did not
// answer as expected: nothing changed on seckill's side, and the same call
// later may succeed.
var ErrProvider = errors.New("the payment provider did not answer")

// RefusedError is a provider's refusal of a call, with its reason.
type RefusedError struct {
	Reason string
}

func (e *RefusedError) Error() string { return "the payment provider refused: " + e.Reason }

// RefundIssued is the refund of an order the provider refunded
// (AdminView.Refund).
const RefundIssued = "issued"

// MaxRefundErrorLen bounds the reason kept for a refused refund, in
// characters.
const MaxRefundErrorLen = 500

// openPayment opens the provider's payment for co's order and keeps its id
// with the order, while the order is still pending; co gets the client
// secret. An order closed meanwhile has the payment voided (ErrClosed); one
// paid meanwhile is answered paid.
func (s *Service) openPayment(ctx context.Context, co *Checkout) error {
	prev, err := s.closer.rows.paymentIntent(ctx, co.OrderID)
	if err != nil {
		return err
	}
	op, err := s.closer.gateway.Open(ctx, Charge{OrderID: co.OrderID, Reference: co.PaymentReference,
		AmountCents: co.AmountCents, Currency: co.Currency, PaymentID: prev})
	s.o.Metrics.provider("open", err)
	if err != nil {
		return err
	}
	if op.PaymentID != prev {
		res := s.db.WithContext(ctx).Model(&supportRow{}).
			Where("order_id = ? AND status = ?", co.OrderID, StatusPendingPayment).
			Update("payment_intent", op.PaymentID)
		if res.Error != nil {
			return fmt.Errorf("order: keep payment %s of %s: %w", op.PaymentID, co.OrderID, res.Error)
		}
		if res.RowsAffected != 1 {
			// Closed or paid since Get: a closed order's payment is voided
			// here, as the close could not see it.
			o, err := find(ctx, s.db, co.OrderID)
			if err != nil {
				return err
			}
			if o.Status == StatusPaid {
				co.Status = StatusPaid
				return nil
			}
			s.closer.void(ctx, co.OrderID, op.PaymentID)
			return ErrClosed
		}
	}
	co.ClientSecret = op.ClientSecret
	return nil
}

// paymentIntent returns the provider's payment kept with an order, "" when
// none.
func (s *Store) paymentIntent(ctx context.Context, orderID string) (string, error) {
	var r supportRow
	err := s.db.WithContext(ctx).Select("payment_intent").Take(&r, "order_id = ?", orderID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("order: read payment of %s: %w", orderID, err)
	}
	if r.PaymentIntent == nil {
		return "", nil
	}
	return *r.PaymentIntent, nil
}

// voidOpen cancels the provider's payment kept with an order that closed
// unpaid, if it has one and a provider is configured.
func (c *Closer) voidOpen(ctx context.Context, orderID string) {
	if c.gateway == nil {
		return
	}
	id, err := c.rows.paymentIntent(ctx, orderID)
	if err != nil {
		c.log.WarnContext(ctx, "payment not cancelled: its order could not be read", "order_id", orderID, "err", err.Error())
		return
	}
	if id != "" {
		c.void(ctx, orderID, id)
	}
}

// void cancels payment id of a closed order at the provider. A failure is
// logged: the order is closed all the same, and a payment that still
// arrives is recorded refund_due.
func (c *Closer) void(ctx context.Context, orderID, id string) {
	err := c.gateway.Void(context.WithoutCancel(ctx), id)
	c.metrics.provider("void", err)
	if err != nil {
		c.log.WarnContext(ctx, "payment of a closed order not cancelled at the provider; a payment that still arrives is recorded refund_due",
			"order_id", orderID, "payment", id, "err", err.Error())
	}
}

// refund refunds, through the provider, the applied payment of r, an
// order support staff cancelled after it was paid: refund issued with the
// refund's id, or still due with the reason the provider gave. r is
// updated as the row ends up.
func (c *Closer) refund(ctx context.Context, r *supportRow) error {
	ctx = context.WithoutCancel(ctx)
	var p Payment
	err := c.db.WithContext(ctx).Where("order_id = ? AND status = ?", r.OrderID, PaymentApplied).Take(&p).Error
	var updates map[string]any
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		updates = map[string]any{"refund_error": "no payment of the provider's paid this order: refund it by hand"}
	case err != nil:
		return fmt.Errorf("order: refund %s: %w", r.OrderID, err)
	default:
		id, rerr := c.gateway.Refund(ctx, p.PaymentID, "refund_"+r.paymentReference())
		c.metrics.provider("refund", rerr)
		if rerr == nil {
			updates = map[string]any{"refund": RefundIssued, "refund_id": id, "refund_error": nil}
			break
		}
		c.log.WarnContext(ctx, "refund not made: it stays due", "order_id", r.OrderID, "payment_id", p.PaymentID, "err", rerr.Error())
		updates = map[string]any{"refund_error": truncate(rerr.Error(), MaxRefundErrorLen)}
	}
	res := c.db.WithContext(ctx).Model(&supportRow{}).Where("order_id = ? AND refund = ?", r.OrderID, RefundDue).Updates(updates)
	if res.Error != nil {
		return fmt.Errorf("order: refund %s: %w", r.OrderID, res.Error)
	}
	cur, err := take[supportRow](ctx, c.db, r.OrderID)
	if err != nil {
		return err
	}
	*r = *cur
	return nil
}

// truncate returns s cut to at most n characters.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// RefundCounts returns the orders support staff cancelled after they were
// paid, by refund: due (owed, or refused by the provider) and issued.
func RefundCounts(ctx context.Context, db *gorm.DB) (map[string]int64, error) {
	var rows []struct {
		Refund string
		N      int64
	}
	if err := db.WithContext(ctx).Model(&supportRow{}).Select("refund, COUNT(*) AS n").
		Where("refund IS NOT NULL").Group("refund").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("order: count refunds: %w", err)
	}
	out := map[string]int64{RefundDue: 0, RefundIssued: 0}
	for _, r := range rows {
		out[r.Refund] = r.N
	}
	return out, nil
}
