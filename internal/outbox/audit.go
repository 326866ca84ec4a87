package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Gap is a kind of disagreement between the orders and their events: how
// many, and a few order ids to look at.
type Gap struct {
	Type   string   `json:"type"`
	Count  int64    `json:"count"`
	Sample []string `json:"sample"`
}

// AuditReport says whether every order change has its event and every event
// its change.
type AuditReport struct {
	// Since is where the check starts: the oldest event in the outbox, or
	// events.retention ago if later (older delivered events are deleted).
	// Zero when the outbox is empty: nothing to check.
	Since time.Time `json:"since"`
	// Missing: changes since Since without their event (an order persisted
	// without order.created, paid without order.paid, ...).
	Missing []Gap `json:"missing,omitempty"`
	// Orphans: events whose change SQL does not have (order.paid of an
	// order never paid, any event of an order not in SQL).
	Orphans []Gap  `json:"orphans,omitempty"`
	Counts  Counts `json:"counts"`
}

// OK reports whether no change lacks its event and no event its change.
func (r AuditReport) OK() bool { return len(r.Missing) == 0 && len(r.Orphans) == 0 }

// changes are the order changes that write an event: the event type, the
// condition on an order row (o) that it happened, and when.
var changes = []struct{ typ, happened, at string }{
	{OrderCreated, "o.status <> 'failed'", "o.persisted_at"},
	{OrderPaid, "o.paid_at IS NOT NULL", "o.paid_at"},
	{OrderCancelled, "o.status = 'cancelled'", "o.closed_at"},
	{OrderExpired, "o.status = 'expired'", "o.closed_at"},
	{OrderFailed, "o.status = 'failed'", "o.closed_at"},
}

// Audit checks the orders table and the payments table against the outbox
// at now: each change made since the report's Since has its event, and each
// event its change. Events are written in the change's transaction, so any
// gap is a defect.
func Audit(ctx context.Context, db *gorm.DB, now time.Time, retention time.Duration) (AuditReport, error) {
	db = db.WithContext(ctx)
	var r AuditReport
	var err error
	if r.Counts, err = Count(ctx, db, now); err != nil {
		return r, err
	}
	var oldest Event
	err = db.Select("created_at").Order("id").Take(&oldest).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("outbox: audit: %w", err)
	}
	r.Since = oldest.CreatedAt.UTC()
	if h := now.UTC().Add(-retention); h.After(r.Since) {
		r.Since = h
	}
	gap := func(list *[]Gap, typ, from string, args ...any) error {
		g := Gap{Type: typ}
		if err := db.Raw("SELECT COUNT(*) "+from, args...).Scan(&g.Count).Error; err != nil {
			return fmt.Errorf("outbox: audit %s: %w", typ, err)
		}
		if g.Count == 0 {
			return nil
		}
		if err := db.Raw("SELECT order_id "+from+" ORDER BY order_id LIMIT 5", args...).Scan(&g.Sample).Error; err != nil {
			return fmt.Errorf("outbox: audit %s: %w", typ, err)
		}
		*list = append(*list, g)
		return nil
	}
	for _, c := range changes {
		err := gap(&r.Missing, c.typ, "FROM orders o WHERE "+c.happened+" AND "+c.at+" >= ? "+
			"AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.order_id = o.order_id AND e.type = ?)", r.Since, c.typ)
		if err != nil {
			return r, err
		}
		err = gap(&r.Orphans, c.typ, "FROM outbox e WHERE e.type = ? "+
			"AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.order_id = e.order_id AND "+c.happened+")", c.typ)
		if err != nil {
			return r, err
		}
	}
	err = gap(&r.Missing, PaymentRefundDue, "FROM payments p WHERE p.status = 'refund_due' AND p.received_at >= ? "+
		"AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.order_id = p.order_id AND e.type = ?)", r.Since, PaymentRefundDue)
	if err != nil {
		return r, err
	}
	err = gap(&r.Orphans, PaymentRefundDue, "FROM outbox e WHERE e.type = ? "+
		"AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.order_id = e.order_id AND p.status = 'refund_due')", PaymentRefundDue)
	return r, err
}
