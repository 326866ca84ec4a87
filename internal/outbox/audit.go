package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	Orphans []Gap `json:"orphans,omitempty"`
	// Receivers are the backlogs of the receivers dispatchers have.
	Receivers []ReceiverCounts `json:"receivers"`
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
// gap is a defect. It reads one snapshot, so that an event still in a batch
// (not yet moved into its outbox row) is seen with its change.
func Audit(ctx context.Context, db *gorm.DB, now time.Time, retention time.Duration) (AuditReport, error) {
	var r AuditReport
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		r, err = audit(tx, now, retention)
		return err
	}, snapshot(db))
	return r, err
}

// snapshot makes a transaction read one consistent state on MySQL
// (REPEATABLE READ reads its first read's snapshot); SQLite's transactions
// do anyway. Not READ ONLY: TiDB refuses START TRANSACTION READ ONLY by
// default, and the snapshot is the same without it.
func snapshot(db *gorm.DB) *sql.TxOptions {
	if db.Dialector.Name() != "mysql" {
		return nil
	}
	return &sql.TxOptions{Isolation: sql.LevelRepeatableRead}
}

func audit(db *gorm.DB, now time.Time, retention time.Duration) (AuditReport, error) {
	var r AuditReport
	queued, since, err := queuedEvents(db)
	if err != nil {
		return r, err
	}
	if r.Receivers, err = Count(db.Statement.Context, db, now); err != nil {
		return r, err
	}
	var oldest Event
	err = db.Select("created_at").Order("id").Take(&oldest).Error
	if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		return r, fmt.Errorf("outbox: audit: %w", err)
	}
	if err == nil && (since.IsZero() || oldest.CreatedAt.Before(since)) {
		since = oldest.CreatedAt
	}
	if since.IsZero() {
		return r, nil
	}
	r.Since = since.UTC()
	if h := now.UTC().Add(-retention); h.After(r.Since) {
		r.Since = h
	}
	// gap adds to list the order ids that query (selecting order_id) finds,
	// less those in skip.
	gap := func(list *[]Gap, typ string, skip map[string]bool, query string, args ...any) error {
		g := Gap{Type: typ}
		if err := db.Raw("SELECT COUNT(*) FROM ("+query+") q", args...).Scan(&g.Count).Error; err != nil {
			return fmt.Errorf("outbox: audit %s: %w", typ, err)
		}
		if g.Count == 0 {
			return nil
		}
		if len(skip) == 0 {
			if err := db.Raw(query+" ORDER BY order_id LIMIT 5", args...).Scan(&g.Sample).Error; err != nil {
				return fmt.Errorf("outbox: audit %s: %w", typ, err)
			}
		} else {
			// Found ones may be in a batch: read them all (as many as
			// the batches hold, plus the real gaps) to leave those out.
			var ids []string
			if err := db.Raw(query+" ORDER BY order_id", args...).Scan(&ids).Error; err != nil {
				return fmt.Errorf("outbox: audit %s: %w", typ, err)
			}
			g = gapOf(typ, ids, func(id string) bool { return !skip[id] })
			if g.Count == 0 {
				return nil
			}
		}
		*list = append(*list, g)
		return nil
	}
	for _, c := range changes {
		err := gap(&r.Missing, c.typ, queued[c.typ], "SELECT o.order_id FROM orders o WHERE "+c.happened+" AND "+c.at+" >= ? "+
			"AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.order_id = o.order_id AND e.type = ?)", r.Since, c.typ)
		if err != nil {
			return r, err
		}
		err = gap(&r.Orphans, c.typ, nil, "SELECT e.order_id FROM outbox e WHERE e.type = ? "+
			"AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.order_id = e.order_id AND "+c.happened+")", c.typ)
		if err != nil {
			return r, err
		}
		if err := queuedOrphans(db, &r, c.typ, "SELECT o.order_id FROM orders o WHERE o.order_id IN ? AND "+c.happened, queued[c.typ]); err != nil {
			return r, err
		}
	}
	err = gap(&r.Missing, PaymentRefundDue, queued[PaymentRefundDue], "SELECT p.order_id FROM payments p WHERE p.status = 'refund_due' AND p.received_at >= ? "+
		"AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.order_id = p.order_id AND e.type = ?)", r.Since, PaymentRefundDue)
	if err != nil {
		return r, err
	}
	err = gap(&r.Orphans, PaymentRefundDue, nil, "SELECT e.order_id FROM outbox e WHERE e.type = ? "+
		"AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.order_id = e.order_id AND p.status = 'refund_due')", PaymentRefundDue)
	if err != nil {
		return r, err
	}
	return r, queuedOrphans(db, &r, PaymentRefundDue, "SELECT p.order_id FROM payments p WHERE p.order_id IN ? AND p.status = 'refund_due'", queued[PaymentRefundDue])
}

// queuedOrphans adds to r's orphans the orders of events of type typ still
// in batches (orders) whose change query (selecting the order ids among
// those given) does not find.
func queuedOrphans(db *gorm.DB, r *AuditReport, typ, query string, orders map[string]bool) error {
	ids := slices.Sorted(maps.Keys(orders))
	found := map[string]bool{}
	for chunk := range slices.Chunk(ids, 1000) {
		var have []string
		if err := db.Raw(query, chunk).Scan(&have).Error; err != nil {
			return fmt.Errorf("outbox: audit %s: %w", typ, err)
		}
		for _, id := range have {
			found[id] = true
		}
	}
	g := gapOf(typ, ids, func(id string) bool { return !found[id] })
	if g.Count == 0 {
		return nil
	}
	for i := range r.Orphans {
		if r.Orphans[i].Type == typ {
			r.Orphans[i].Count += g.Count
			r.Orphans[i].Sample = append(r.Orphans[i].Sample, g.Sample...)[:min(5, len(r.Orphans[i].Sample)+len(g.Sample))]
			return nil
		}
	}
	r.Orphans = append(r.Orphans, g)
	return nil
}

// gapOf is the gap of type typ made of the ids (in order) that count says
// to count.
func gapOf(typ string, ids []string, count func(id string) bool) Gap {
	g := Gap{Type: typ}
	for _, id := range ids {
		if count(id) {
			g.Count++
			if len(g.Sample) < 5 {
				g.Sample = append(g.Sample, id)
			}
		}
	}
	return g
}
