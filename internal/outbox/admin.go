package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Counts is a receiver's backlog.
type Counts struct {
	// Pending counts the events not yet delivered to the receiver: its
	// pending deliveries, and the events it is yet to be given (still in
	// batches, or past its cursor).
	Pending   int64 `json:"pending"`
	Delivered int64 `json:"delivered"`
	Dead      int64 `json:"dead"`
	// OldestPending is the age of the oldest of them; zero when none.
	OldestPending time.Duration `json:"-"`
}

// ReceiverCounts is the backlog of one receiver.
type ReceiverCounts struct {
	Receiver string `json:"receiver"`
	Counts
}

// Count counts the deliveries of every receiver some dispatcher has, by
// status, at now, in name order.
func Count(ctx context.Context, db *gorm.DB, now time.Time) ([]ReceiverCounts, error) {
	var names []string
	if err := db.WithContext(ctx).Model(&registration{}).Where("name <> ?", everyReceiver).Order("name").
		Pluck("name", &names).Error; err != nil {
		return nil, fmt.Errorf("outbox: count: %w", err)
	}
	out := make([]ReceiverCounts, len(names))
	for i, name := range names {
		c, err := backlog(ctx, db, name, now)
		if err != nil {
			return nil, err
		}
		if err := db.WithContext(ctx).Model(&Delivery{}).Where("receiver = ? AND status = ?", name, StatusDelivered).
			Count(&c.Delivered).Error; err != nil {
			return nil, fmt.Errorf("outbox: count %s: %w", name, err)
		}
		out[i] = ReceiverCounts{Receiver: name, Counts: c}
	}
	return out, nil
}

// backlog counts receiver name's pending and dead deliveries at now, the
// events not yet made its deliveries among the pending (Delivered is left
// zero: it would read every delivered row).
func backlog(ctx context.Context, db *gorm.DB, name string, now time.Time) (Counts, error) {
	db = db.WithContext(ctx)
	var c Counts
	fail := func(err error) (Counts, error) { return Counts{}, fmt.Errorf("outbox: count %s: %w", name, err) }
	var rows []struct {
		Status string
		N      int64
	}
	if err := db.Model(&Delivery{}).Select("status, COUNT(*) AS n").Where("receiver = ? AND status IN ?", name,
		[]string{StatusPending, StatusDead}).Group("status").Scan(&rows).Error; err != nil {
		return fail(err)
	}
	for _, r := range rows {
		if r.Status == StatusPending {
			c.Pending = r.N
		} else {
			c.Dead = r.N
		}
	}
	var r registration
	if err := db.Take(&r, "name = ?", name).Error; err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		return fail(err)
	}
	var ahead, queued int64
	if err := db.Model(&Event{}).Where("id >= ?", r.NextID).Count(&ahead).Error; err != nil {
		return fail(err)
	}
	if err := db.Model(&batch{}).Select("COALESCE(SUM(n), 0)").Scan(&queued).Error; err != nil {
		return fail(err)
	}
	// The oldest: the first pending delivery's event, the first event past
	// the cursor or the first batch, whichever is older.
	oldest := func(q *gorm.DB) error {
		var at struct{ CreatedAt time.Time }
		err := q.Select("created_at").Order("id").Take(&at).Error
		if err == nil {
			c.OldestPending = max(c.OldestPending, now.Sub(at.CreatedAt))
		}
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil
		}
		return err
	}
	if c.Pending > 0 {
		// Not "AS row": ROW is a reserved word on TiDB.
		var first struct{ FirstRow uint64 }
		if err := db.Model(&Delivery{}).Select("MIN(event_row) AS first_row").Where("receiver = ? AND status = ?", name, StatusPending).
			Scan(&first).Error; err != nil {
			return fail(err)
		}
		if err := oldest(db.Model(&Event{}).Where("id = ?", first.FirstRow)); err != nil {
			return fail(err)
		}
	}
	if ahead > 0 {
		if err := oldest(db.Model(&Event{}).Where("id >= ?", r.NextID)); err != nil {
			return fail(err)
		}
	}
	if queued > 0 {
		if err := oldest(db.Model(&batch{})); err != nil {
			return fail(err)
		}
	}
	c.Pending += ahead + queued
	return c, nil
}

// View is what an admin sees of an event's delivery to one receiver.
type View struct {
	EventID     string          `json:"event_id"`
	Type        string          `json:"type"`
	OrderID     string          `json:"order_id"`
	Receiver    string          `json:"receiver"`
	Status      string          `json:"status"`
	Attempts    int             `json:"attempts"`
	CreatedAt   time.Time       `json:"created_at"`
	NextAt      *time.Time      `json:"next_at,omitempty"`
	DeliveredAt *time.Time      `json:"delivered_at,omitempty"`
	LastError   *string         `json:"last_error,omitempty"`
	Event       json.RawMessage `json:"event"` // as delivered
}

// viewRow is a delivery with its event, as List and Redeliver read them.
type viewRow struct {
	Delivery
	EventID   string
	Type      string
	Payload   string
	CreatedAt time.Time
}

// viewColumns select a viewRow from outbox_deliveries d joined with
// outbox e.
const viewColumns = "d.*, e.event_id, e.type, e.payload, e.created_at"

func (r *viewRow) view() View {
	v := View{EventID: r.EventID, Type: r.Type, OrderID: r.OrderID, Receiver: r.Receiver, Status: r.Status, Attempts: r.Attempts,
		CreatedAt: r.CreatedAt.UTC(), LastError: r.LastError, Event: json.RawMessage(r.Payload)}
	if r.Status == StatusPending {
		t := r.NextAt.UTC()
		v.NextAt = &t
	}
	if r.DeliveredAt != nil {
		t := r.DeliveredAt.UTC()
		v.DeliveredAt = &t
	}
	return v
}

// MaxPage is the most events a page lists.
const MaxPage = 500

// List returns up to limit deliveries with status (pending, delivered or
// dead), to receiver (every receiver when empty), in the order they were
// made, after the delivery with row id after (0: from the first), and the
// cursor of the next page (0: none). ErrNotFound for a receiver the outbox
// does not have.
func List(ctx context.Context, db *gorm.DB, status, receiver string, after uint64, limit int) ([]View, uint64, error) {
	limit = min(max(limit, 1), MaxPage)
	db = db.WithContext(ctx)
	q := db.Table("outbox_deliveries d").Select(viewColumns).Joins("JOIN outbox e ON e.id = d.event_row").
		Where("d.status = ? AND d.id > ? AND d.receiver <> ?", status, after, everyReceiver)
	if receiver != "" {
		if err := known(db, receiver); err != nil {
			return nil, 0, err
		}
		q = q.Where("d.receiver = ?", receiver)
	}
	var rows []viewRow
	if err := q.Order("d.id").Limit(limit + 1).Scan(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("outbox: list: %w", err)
	}
	var next uint64
	if len(rows) > limit {
		rows = rows[:limit]
		next = rows[limit-1].ID
	}
	out := make([]View, len(rows))
	for i := range rows {
		out[i] = rows[i].view()
	}
	return out, next, nil
}

// known returns ErrNotFound, naming it, unless some dispatcher has
// receiver.
func known(db *gorm.DB, name string) error {
	var n int64
	if err := db.Model(&registration{}).Where("name = ? AND name <> ?", name, everyReceiver).Count(&n).Error; err != nil {
		return fmt.Errorf("outbox: receiver %s: %w", name, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: receiver %s", ErrNotFound, name)
	}
	return nil
}

// Redeliver sends an event again, now, with a fresh retry window, to
// receiver, or to every receiver when it is empty: a dead delivery, a
// delivered one (for a receiver that lost it) or a pending one waiting out
// a back-off, and one to a receiver that never had the event. Each keeps
// the event's id and its place among its order's events to that receiver.
// It returns the deliveries made pending, by receiver. ErrNotFound for an
// unknown event id or receiver.
func Redeliver(ctx context.Context, db *gorm.DB, eventID, to string, now time.Time) ([]View, error) {
	now = now.UTC()
	var out []View
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var e Event
		err := tx.Take(&e, "event_id = ?", eventID).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return fmt.Errorf("%w: event %s", ErrNotFound, eventID)
		}
		if err != nil {
			return err
		}
		names := []string{to}
		if to == "" {
			if err := tx.Model(&registration{}).Where("name <> ?", everyReceiver).Order("name").Pluck("name", &names).Error; err != nil {
				return err
			}
		} else if err := known(tx, to); err != nil {
			return err
		}
		for _, name := range names {
			// A receiver that never had the event gets a delivery of it.
			d := Delivery{EventRow: e.ID, Receiver: name, OrderID: e.OrderID, Status: StatusPending, WindowFrom: now, NextAt: now}
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&d).Error; err != nil {
				return err
			}
			err := tx.Model(&Delivery{}).Where("event_row = ? AND receiver = ?", e.ID, name).Updates(map[string]any{
				"status": StatusPending, "next_at": now, "window_from": now, "delivered_at": nil,
			}).Error
			if err != nil {
				return err
			}
		}
		var rows []viewRow
		if err := tx.Table("outbox_deliveries d").Select(viewColumns).Joins("JOIN outbox e ON e.id = d.event_row").
			Where("d.event_row = ? AND d.receiver IN ?", e.ID, names).Order("d.receiver").Scan(&rows).Error; err != nil {
			return err
		}
		out = make([]View, len(rows))
		for i := range rows {
			out[i] = rows[i].view()
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("outbox: redeliver %s: %w", eventID, err)
	}
	return out, nil
}
