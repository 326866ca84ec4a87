// Package order is an order's lifecycle as a shopper sees it: placing it
// (through internal/stock), reading and listing it, paying, cancelling, and
// expiring it when its payment deadline passes. It owns the orders table's
// row, statuses and ids; internal/drain writes accepted orders into it.
//
// The guarantees: an order accepted with a 202 is the one a retry with the
// same request id gets back; an order is paid, cancelled or expired once,
// and a closed order's units go back on sale once (SQL first, then Redis,
// and again on every later close, so a process dying in between never keeps
// them taken).
package order

import (
	"errors"
	"time"

	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/stock"
)

// Statuses of an order. Queued orders are accepted but not yet in SQL.
const (
	StatusQueued         = "queued"
	StatusPendingPayment = "pending_payment"
	StatusPaid           = "paid"
	StatusCancelled      = "cancelled"
	StatusExpired        = "expired"
	// StatusFailed: never the shopper's; its units are returned. SQL's
	// stock guard refused it, or an operator dropped its dead letter.
	StatusFailed = "failed"
)

// Errors. The HTTP layer maps each to a status code.
var (
	ErrInvalid    = errors.New("invalid request")
	ErrNotFound   = errors.New("order not found")
	ErrNotStarted = errors.New("sale not started")
	// ErrNoPasses: a SKU has a waiting room but the service was given no
	// way to check its passes (a wiring defect).
	ErrNoPasses = errors.New("order: no waiting room pass checker")
	ErrEnded    = errors.New("sale ended")
	// ErrLimitExceeded is stock's: the buy script refuses a shopper over
	// the limit, and the service the qty over it before any I/O.
	ErrLimitExceeded  = stock.ErrLimitExceeded
	ErrClosed         = errors.New("order cancelled or expired")
	ErrQueued         = errors.New("order accepted but not yet confirmed, retry shortly")
	ErrNotCancellable = errors.New("order already paid")
)

// UnknownOutcomeError is a buy whose outcome is not known: a store failed
// after it may have taken the units and made the order. A retry with
// RequestID, by the same shopper, returns the order if there is one, and
// buys otherwise.
type UnknownOutcomeError struct {
	RequestID string
	Err       error
}

func (e *UnknownOutcomeError) Error() string {
	return "outcome unknown (retry with request id " + e.RequestID + "): " + e.Err.Error()
}

func (e *UnknownOutcomeError) Unwrap() error { return e.Err }

// Limits on input.
const (
	MaxQty          = 1000
	MaxUserIDLen    = 64
	MaxRequestIDLen = 64
)

// Order is a row of table orders.
type Order struct {
	ID          uint64     `gorm:"column:id;primaryKey;autoIncrement"`
	OrderID     string     `gorm:"column:order_id"`
	SKU         uint64     `gorm:"column:sku_id"`
	User        string     `gorm:"column:user_id"`
	RequestID   *string    `gorm:"column:request_id"`
	Qty         int        `gorm:"column:qty"`
	PriceCents  int64      `gorm:"column:price_cents"`
	Status      string     `gorm:"column:status"`
	Fence       int64      `gorm:"column:fence"`
	CreatedAt   time.Time  `gorm:"column:created_at"`
	PersistedAt time.Time  `gorm:"column:persisted_at"`
	ExpiresAt   time.Time  `gorm:"column:expires_at"`
	PaidAt      *time.Time `gorm:"column:paid_at"`
	ClosedAt    *time.Time `gorm:"column:closed_at"`
	UpdatedAt   time.Time  `gorm:"column:updated_at"`
	// PaymentReference is written with the row (NULL in rows written
	// before migration 00014); reads take orderid.Reference of the id.
	PaymentReference *string `gorm:"column:payment_reference"`
}

// TableName is orders.
func (Order) TableName() string { return "orders" }

// FromTask is the row of the order in task t, pending payment, as it is
// written at now; it is due paymentTimeout after it was taken.
func FromTask(t stock.OrderTask, paymentTimeout time.Duration, now time.Time) Order {
	created := time.UnixMilli(t.CreatedMS).UTC()
	o := Order{
		OrderID: t.OrderID, SKU: t.SKU, User: t.User, Qty: t.Qty, PriceCents: t.PriceCents,
		Status: StatusPendingPayment, Fence: t.Fence, CreatedAt: created, PersistedAt: now,
		ExpiresAt: created.Add(paymentTimeout), UpdatedAt: now,
	}
	if ref, ok := orderid.Reference(t.OrderID); ok {
		o.PaymentReference = &ref
	}
	if t.RequestID != "" {
		rid := t.RequestID
		o.RequestID = &rid
	}
	return o
}

// View is what a shopper sees of an order.
type View struct {
	OrderID    string    `json:"order_id"`
	SKU        uint64    `json:"sku_id"`
	User       string    `json:"user_id"`
	Qty        int       `json:"qty"`
	PriceCents int64     `json:"price_cents"`
	Status     string    `json:"status"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	// PaymentReference is what a payment provider knows the order by
	// (orderid.Reference): the same on every call.
	PaymentReference string `json:"payment_reference"`
}

// View returns what a shopper sees of the order.
func (o *Order) View() *View {
	ref, _ := orderid.Reference(o.OrderID)
	return &View{OrderID: o.OrderID, SKU: o.SKU, User: o.User, Qty: o.Qty, PriceCents: o.PriceCents,
		Status: o.Status, CreatedAt: o.CreatedAt.UTC(), ExpiresAt: o.ExpiresAt.UTC(), PaymentReference: ref}
}

// ValidUserID reports whether s can identify a shopper: 1 to 64 characters
// of letters, digits and - _ . : @.
func ValidUserID(s string) bool { return validToken(s, MaxUserIDLen) }

func validToken(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == ':' || c == '@') {
			return false
		}
	}
	return true
}
