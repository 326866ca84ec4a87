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
