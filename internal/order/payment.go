package order

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/outbox"
)

// Outcomes of a payment notification (Payment.Status).
const (
	PaymentApplied   = "applied"    // the order became paid
	PaymentRefundDue = "refund_due" // the order could not take it: the shop owes the money back
	PaymentMismatch  = "mismatch"   // amount or currency not the order's: the order is unchanged
)

// Reasons a payment is refund_due or a mismatch (Payment.Reason); a
// refund_due payment for a closed order has the order's status as reason.
const (
	ReasonLate     = "late"     // the order was still pending, past its deadline
	ReasonPaid     = "paid"     // another payment had paid the order
	ReasonAmount   = "amount"   // amount_cents is not the order's price_cents (its total)
	ReasonCurrency = "currency" // currency is not the shop's (payment.currency)
)

// Errors of a payment notification.
var (
	// ErrPaymentMismatch is a payment whose amount or currency is not the
	// order's, or a payment id seen before for another order or amount.
	ErrPaymentMismatch = errors.New("payment does not match the order")
	// ErrPaymentEarly is a payment for an order accepted but not yet in
	// SQL: nothing is recorded; the same notification a moment later is
	// applied.
	ErrPaymentEarly = errors.New("order accepted but not yet confirmed: send the notification again shortly")
)

// Limits on a payment notification's fields.
const (
	MaxPaymentIDLen = 128
	MaxWebhookIDLen = 128
)

// MaxPaymentReferenceLen bounds a payment reference a notice carries (a
// real one is orderid.ReferenceLen).
const MaxPaymentReferenceLen = 64

// PaymentNotice is a payment the payment side reports as succeeded. It
// names its order by OrderID or by PaymentReference (the order's
// orderid.Reference, which providers carry as their order number); when
// both are set they must name the same order.
type PaymentNotice struct {
	WebhookID        string // the notification's id (webhook-id), the same on every retry
	PaymentID        string // the payment side's id of the payment
	OrderID          string
	PaymentReference string
	AmountCents      int64
	Currency         string
}

// Validate refuses a notice that no payment can be: ErrInvalid.
func (n PaymentNotice) Validate() error {
	switch {
	case !validToken(n.WebhookID, MaxWebhookIDLen):
		return fmt.Errorf("%w: webhook-id must be 1 to %d letters, digits or - _ . : @", ErrInvalid, MaxWebhookIDLen)
	case !validToken(n.PaymentID, MaxPaymentIDLen):
		return fmt.Errorf("%w: data.payment_id must be 1 to %d letters, digits or - _ . : @", ErrInvalid, MaxPaymentIDLen)
	case n.OrderID == "" && n.PaymentReference == "":
		return fmt.Errorf("%w: the notification must name its order: an order id or a payment reference", ErrInvalid)
	case len(n.OrderID) > 64:
		return fmt.Errorf("%w: data.order_id must be an order id", ErrInvalid)
	case len(n.PaymentReference) > MaxPaymentReferenceLen:
		return fmt.Errorf("%w: the payment reference must be at most %d characters", ErrInvalid, MaxPaymentReferenceLen)
	case n.AmountCents < 0:
		return fmt.Errorf("%w: data.amount_cents must not be negative", ErrInvalid)
	case len(n.Currency) != 3:
		return fmt.Errorf("%w: data.currency must be a three-letter ISO 4217 code", ErrInvalid)
	}
	return nil
}

// Payment is a row of table payments: a payment notification received, and
// what it did.
type Payment struct {
	ID          uint64    `gorm:"column:id;primaryKey;autoIncrement" json:"-"`
	PaymentID   string    `gorm:"column:payment_id" json:"payment_id"`
	WebhookID   string    `gorm:"column:webhook_id" json:"webhook_id"`
	OrderID     string    `gorm:"column:order_id" json:"order_id"`
	AmountCents int64     `gorm:"column:amount_cents" json:"amount_cents"`
	Currency    string    `gorm:"column:currency" json:"currency"`
	Status      string    `gorm:"column:status" json:"status"`
	Reason      string    `gorm:"column:reason" json:"reason,omitempty"`
	ReceivedAt  time.Time `gorm:"column:received_at" json:"received_at"`
}

// TableName is payments.
func (Payment) TableName() string { return "payments" }

// PaymentResult is what a payment notification did.
type PaymentResult struct {
	Payment
	OrderStatus string `json:"order_status"`
	// Replay is true when the notification, or its payment id, was
	// recorded before: nothing changed now.
	Replay bool `json:"replay"`
}

// Checkout is what the shop's checkout needs to charge for an order
// (payment.mode webhook or a provider's): the payment side's notification
// of the charge, naming the order, marks it paid.
type Checkout struct {
	OrderID     string    `json:"order_id"`
	Status      string    `json:"status"`
	AmountCents int64     `json:"amount_cents"`
	Currency    string    `json:"currency"`
	ExpiresAt   time.Time `json:"expires_at"`
	// PaymentReference is the same on every call for the order.
	PaymentReference string `json:"payment_reference"`
	// ClientSecret completes the payment the provider opened for the
	// order (payment.mode stripe: the PaymentIntent's), while it is
	// pending.
	ClientSecret string `json:"client_secret,omitempty"`
}

// Checkout returns what the shop's checkout needs to charge for the user's
// order: only the payment side marks an order paid. With a Gateway (the
// closer's), a pending order's payment is opened at the provider (once per
// order) and kept with it, and the answer carries its client secret. Errors:
// ErrNotFound, ErrQueued (not in SQL yet), ErrClosed (cancelled, expired,
// failed, or past its deadline), and the Gateway's (ErrProvider).
func (s *Service) Checkout(ctx context.Context, user, orderID string) (*Checkout, error) {
	v, err := s.Get(ctx, user, orderID)
	if err != nil {
		return nil, err
	}
	switch {
	case v.Status == StatusQueued:
		return nil, ErrQueued
	case v.Status == StatusPaid:
	case v.Status != StatusPendingPayment || !s.o.Now().Before(v.ExpiresAt):
		return nil, ErrClosed
	}
	co := &Checkout{OrderID: v.OrderID, Status: v.Status, AmountCents: v.PriceCents,
		Currency: s.o.Currency, ExpiresAt: v.ExpiresAt, PaymentReference: v.PaymentReference}
	if s.closer.gateway != nil && co.Status == StatusPendingPayment {
		if err := s.openPayment(ctx, co); err != nil {
			return nil, err
		}
	}
	return co, nil
}

// ApplyPayment records a payment the payment side reports and applies it to
// its order (named by id or by payment reference), in one transaction: a pending order before its deadline
// becomes paid (applied). A payment for an order that cannot take it —
// cancelled, expired, failed, past its deadline, or paid by another
// payment — is recorded refund_due and changes nothing: the units of a
// closed order may have been sold again and are never taken back. An
// amount or currency that is not the order's is recorded as a mismatch
// and returned with ErrPaymentMismatch. A notification whose webhook id or
// payment id was recorded before is a replay: it returns the record and
// changes nothing (ErrPaymentMismatch again for a mismatch, and for the
// same payment id naming another order or amount).
//
// A payment and the order's expiry race on the order's row: exactly one of
// them changes it, and the payment records what it found.
//
// Errors also, with nothing recorded: ErrInvalid, ErrNotFound (no such
// order), ErrPaymentEarly (the order is not in SQL yet).
func (s *Service) ApplyPayment(ctx context.Context, n PaymentNotice) (*PaymentResult, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	if n.PaymentReference != "" {
		id, ok := orderid.FromReference(n.PaymentReference)
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: no order has payment reference %q", ErrNotFound, n.PaymentReference)
		case n.OrderID != "" && n.OrderID != id:
			return nil, fmt.Errorf("%w: the order id and the payment reference name different orders", ErrInvalid)
		}
		n.OrderID = id
	}
	if _, _, _, ok := orderid.Parse(n.OrderID); !ok {
		// Not an order id, though SQL's comparison, which ignores
		// trailing spaces, might find an order by it.
		return nil, fmt.Errorf("%w: no order %q", ErrNotFound, n.OrderID)
	}
	if r, err := s.recorded(ctx, s.db, n); r != nil || err != nil {
		return r, err
	}
	var res *PaymentResult
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var o Order
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&o, "order_id = ?", n.OrderID).Error; err != nil {
			return err
		}
		now := s.o.Now().UTC()
		p := Payment{PaymentID: n.PaymentID, WebhookID: n.WebhookID, OrderID: n.OrderID,
			AmountCents: n.AmountCents, Currency: n.Currency, ReceivedAt: now}
		p.Status, p.Reason = s.judge(&o, n, now)
		ins := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&p)
		if ins.Error != nil {
			return ins.Error
		}
		if ins.RowsAffected == 0 {
			return errRecorded // a replay committed meanwhile
		}
		if p.Status == PaymentApplied {
			up := tx.Model(&Order{}).Where("id = ? AND status = ?", o.ID, StatusPendingPayment).
				Updates(map[string]any{"status": StatusPaid, "paid_at": now, "updated_at": now})
			if up.Error != nil {
				return up.Error
			}
			if up.RowsAffected != 1 {
				return fmt.Errorf("order %s changed under its row lock", o.OrderID)
			}
			o.Status = StatusPaid
			if err := s.closer.rows.eventOf(tx, outbox.OrderPaid, o.OrderID, nil, now); err != nil {
				return err
			}
		}
		if p.Status == PaymentRefundDue {
			if err := s.closer.rows.eventOf(tx, outbox.PaymentRefundDue, p.OrderID, &p, now); err != nil {
				return err
			}
		}
		res = &PaymentResult{Payment: p, OrderStatus: o.Status}
		return nil
	})
	switch {
	case errors.Is(err, errRecorded):
		return s.recorded(ctx, s.db, n)
	case errors.Is(err, gorm.ErrRecordNotFound):
		return nil, s.notInSQL(ctx, n.OrderID)
	case err != nil:
		return nil, fmt.Errorf("order: payment %s for %s: %w", n.PaymentID, n.OrderID, err)
	}
	s.o.Metrics.payment(res.Status, res.Reason)
	if res.Status == PaymentApplied {
		s.o.Metrics.paid()
	}
	if res.Status == PaymentMismatch {
		return res, fmt.Errorf("%w: %s", ErrPaymentMismatch, mismatchDetail(res.Reason))
	}
	return res, nil
}

// errRecorded rolls back a payment's transaction whose notification was
// recorded by another one meanwhile.
var errRecorded = errors.New("payment recorded meanwhile")

// judge says what a payment does to order o, locked, at now.
func (s *Service) judge(o *Order, n PaymentNotice, now time.Time) (status, reason string) {
	switch {
	case n.Currency != s.o.Currency:
		return PaymentMismatch, ReasonCurrency
	case n.AmountCents != o.PriceCents:
		return PaymentMismatch, ReasonAmount
	case o.Status == StatusPaid:
		return PaymentRefundDue, ReasonPaid
	case o.Status != StatusPendingPayment:
		return PaymentRefundDue, o.Status
	case !now.Before(o.ExpiresAt):
		return PaymentRefundDue, ReasonLate
	}
	return PaymentApplied, ""
}

// recorded returns the record of a notification seen before (by webhook id
// or payment id) as a replay, or nil when there is none.
func (s *Service) recorded(ctx context.Context, db *gorm.DB, n PaymentNotice) (*PaymentResult, error) {
	var p Payment
	err := db.WithContext(ctx).Where("webhook_id = ? OR payment_id = ?", n.WebhookID, n.PaymentID).Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("order: read payment %s: %w", n.PaymentID, err)
	}
	if p.OrderID != n.OrderID || p.AmountCents != n.AmountCents || p.Currency != n.Currency {
		return nil, fmt.Errorf("%w: payment %s was recorded for order %s, %d %s", ErrPaymentMismatch, p.PaymentID, p.OrderID, p.AmountCents, p.Currency)
	}
	r := &PaymentResult{Payment: p, Replay: true}
	o, err := find(ctx, db, p.OrderID)
	if err != nil {
		return nil, err
	}
	r.OrderStatus = o.Status
	s.o.Metrics.payment("replay", "")
	if p.Status == PaymentMismatch {
		return r, fmt.Errorf("%w: %s", ErrPaymentMismatch, mismatchDetail(p.Reason))
	}
	return r, nil
}

func mismatchDetail(reason string) string {
	if reason == ReasonCurrency {
		return "the currency is not the shop's; the order is unchanged"
	}
	return "amount_cents is not the order's price_cents (its total); the order is unchanged"
}

// notInSQL tells an order accepted and not in SQL yet, or written by the
// drain since ApplyPayment looked (ErrPaymentEarly: the same notification a
// moment later is applied), from no order at all (ErrNotFound).
func (s *Service) notInSQL(ctx context.Context, orderID string) error {
	if _, err := s.SupportGet(ctx, orderID); err != nil {
		return err
	}
	return ErrPaymentEarly
}

// PaymentQuery selects payments for the admin list.
type PaymentQuery struct {
	Status string // one of the outcomes, or "" for all
	// OrderID, when set, lists the payments of one order.
	OrderID string
}

// Payments lists up to limit recorded payments matching q, newest first,
// after the cursor (0: from the newest), and the cursor of the next page (0
// after the last).
func (s *Service) Payments(ctx context.Context, q PaymentQuery, after uint64, limit int) ([]Payment, uint64, error) {
	tx := s.db.WithContext(ctx).Model(&Payment{})
	if q.Status != "" {
		tx = tx.Where("status = ?", q.Status)
	}
	if q.OrderID != "" {
		tx = tx.Where("order_id = ?", q.OrderID)
	}
	if after > 0 {
		tx = tx.Where("id < ?", after)
	}
	var ps []Payment
	if err := tx.Order("id DESC").Limit(limit + 1).Find(&ps).Error; err != nil {
		return nil, 0, fmt.Errorf("order: list payments: %w", err)
	}
	if len(ps) <= limit {
		return ps, 0, nil
	}
	ps = ps[:limit]
	return ps, ps[limit-1].ID, nil
}

// PaymentCounts returns the payments recorded by outcome.
func PaymentCounts(ctx context.Context, db *gorm.DB) (map[string]int64, error) {
	var rows []struct {
		Status string
		N      int64
	}
	if err := db.WithContext(ctx).Model(&Payment{}).Select("status, COUNT(*) AS n").Group("status").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("order: count payments: %w", err)
	}
	out := map[string]int64{PaymentApplied: 0, PaymentRefundDue: 0, PaymentMismatch: 0}
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}
