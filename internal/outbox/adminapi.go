package outbox

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// Admin serves the admin endpoints on events (GET /admin/events, POST
// /admin/events/{id}/redeliver) from the outbox of DB. It works whether
// events are on or off: off, the outbox is empty.
type Admin struct {
	DB *gorm.DB
}

// List returns a page of the deliveries with status, to receiver (every
// receiver when empty), in the order they were made, after the row id
// after, and the cursor of the next page (0: none); ErrNotFound, naming it,
// for an unknown receiver.
func (a Admin) List(ctx context.Context, status, receiver string, after uint64, limit int) ([]View, uint64, error) {
	return List(ctx, a.DB, status, receiver, after, limit)
}

// Redeliver sends the event eventID again now, to receiver (every receiver
// when empty), and returns its deliveries made pending; ErrNotFound, naming
// it, for an unknown event or receiver.
func (a Admin) Redeliver(ctx context.Context, eventID, receiver string) ([]View, error) {
	return Redeliver(ctx, a.DB, eventID, receiver, time.Now())
}

// Backlog is a receiver's backlog as the admin API shows it.
type Backlog struct {
	Receiver  string `json:"receiver"`
	Pending   int64  `json:"pending"`
	Delivered int64  `json:"delivered"`
	Dead      int64  `json:"dead"`
	// OldestPendingSeconds is the age of its oldest event not yet
	// delivered; 0 when none.
	OldestPendingSeconds float64 `json:"oldest_pending_seconds"`
}

// Receivers returns the backlog of every receiver some dispatcher has, in
// name order.
func (a Admin) Receivers(ctx context.Context) ([]Backlog, error) {
	all, err := Count(ctx, a.DB, time.Now())
	if err != nil {
		return nil, err
	}
	out := make([]Backlog, len(all))
	for i, c := range all {
		out[i] = Backlog{Receiver: c.Receiver, Pending: c.Pending, Delivered: c.Delivered, Dead: c.Dead,
			OldestPendingSeconds: c.OldestPending.Round(time.Millisecond).Seconds()}
	}
	return out, nil
}
