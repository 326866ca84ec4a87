package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Counts is the outbox's backlog.
type Counts struct {
	Pending   int64 `json:"pending"`
	Delivered int64 `json:"delivered"`
	Dead      int64 `json:"dead"`
	// OldestPending is the age of the oldest pending event; zero when none.
	OldestPending time.Duration `json:"-"`
}

// Count counts the events by status, at now; pending counts those still in
// batches too.
func Count(ctx context.Context, db *gorm.DB, now time.Time) (Counts, error) {
	var rows []struct {
		Status string
		N      int64
	}
	if err := db.WithContext(ctx).Model(&Event{}).Select("status, COUNT(*) AS n").Group("status").Scan(&rows).Error; err != nil {
		return Counts{}, fmt.Errorf("outbox: count: %w", err)
	}
	var c Counts
	for _, r := range rows {
		switch r.Status {
		case StatusPending:
			c.Pending = r.N
		case StatusDelivered:
			c.Delivered = r.N
		case StatusDead:
			c.Dead = r.N
		}
	}
	var queued int64
	if err := db.WithContext(ctx).Model(&batch{}).Select("COALESCE(SUM(n), 0)").Scan(&queued).Error; err != nil {
		return Counts{}, fmt.Errorf("outbox: count batches: %w", err)
	}
	// The oldest pending event: the first pending row's or the first
	// batch's, whichever is older.
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
	if queued > 0 {
		if err := oldest(db.WithContext(ctx).Model(&batch{})); err != nil {
			return Counts{}, fmt.Errorf("outbox: oldest batch: %w", err)
		}
	}
	if c.Pending > 0 {
		if err := oldest(db.WithContext(ctx).Model(&Event{}).Where("status = ?", StatusPending)); err != nil {
			return Counts{}, fmt.Errorf("outbox: oldest pending: %w", err)
		}
	}
	c.Pending += queued
	return c, nil
}

// View is what an admin sees of an event.
type View struct {
	EventID     string          `json:"event_id"`
	Type        string          `json:"type"`
	OrderID     string          `json:"order_id"`
	Status      string          `json:"status"`
	Attempts    int             `json:"attempts"`
	CreatedAt   time.Time       `json:"created_at"`
	NextAt      *time.Time      `json:"next_at,omitempty"`
	DeliveredAt *time.Time      `json:"delivered_at,omitempty"`
	LastError   *string         `json:"last_error,omitempty"`
	Event       json.RawMessage `json:"event"` // as delivered
}

func (e *Event) view() View {
	v := View{EventID: e.EventID, Type: e.Type, OrderID: e.OrderID, Status: e.Status, Attempts: e.Attempts,
		CreatedAt: e.CreatedAt.UTC(), LastError: e.LastError, Event: json.RawMessage(e.Payload)}
	if e.Status == StatusPending {
		t := e.NextAt.UTC()
		v.NextAt = &t
	}
	if e.DeliveredAt != nil {
		t := e.DeliveredAt.UTC()
		v.DeliveredAt = &t
	}
	return v
}

// MaxPage is the most events a page lists.
const MaxPage = 500

// List returns up to limit events with status (pending, delivered or dead),
// oldest first, after the event with row id after (0: from the first), and
// the cursor of the next page (0: none).
func List(ctx context.Context, db *gorm.DB, status string, after uint64, limit int) ([]View, uint64, error) {
	limit = min(max(limit, 1), MaxPage)
	var rows []Event
	err := db.WithContext(ctx).Where("status = ? AND id > ?", status, after).Order("id").Limit(limit + 1).Find(&rows).Error
	if err != nil {
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

// Redeliver sends an event again, now, with a fresh retry window: a dead
// one, a delivered one (for a receiver that lost it) or a pending one
// waiting out a back-off. It keeps its id and its place among its order's
// events. ErrNotFound for an unknown id.
func Redeliver(ctx context.Context, db *gorm.DB, eventID string, now time.Time) (View, error) {
	now = now.UTC()
	var e Event
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&Event{}).Where("event_id = ?", eventID).Updates(map[string]any{
			"status": StatusPending, "next_at": now, "window_from": now, "delivered_at": nil,
		})
		if res.Error != nil {
			return res.Error
		}
		// RowsAffected counts rows changed, not found (MySQL): an event
		// already as asked is 0. Its absence tells an unknown id.
		err := tx.Take(&e, "event_id = ?", eventID).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return ErrNotFound
		}
		return err
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return View{}, err
		}
		return View{}, fmt.Errorf("outbox: redeliver %s: %w", eventID, err)
	}
	return e.view(), nil
}
