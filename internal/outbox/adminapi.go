package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Admin serves the admin endpoints on events (GET /admin/events, POST
// /admin/events/{id}/redeliver) from the outbox of DB. It works whether
// events are on or off: off, the outbox is empty.
type Admin struct {
	DB *gorm.DB
}

// List returns a page of the events with status, oldest first, after the
// row id after, and the cursor of the next page (0: none).
func (a Admin) List(ctx context.Context, status string, after uint64, limit int) ([]View, uint64, error) {
	return List(ctx, a.DB, status, after, limit)
}

// Redeliver sends the event eventID again now; ErrNotFound, naming the id,
// for an unknown one.
func (a Admin) Redeliver(ctx context.Context, eventID string) (View, error) {
	v, err := Redeliver(ctx, a.DB, eventID, time.Now())
	if errors.Is(err, ErrNotFound) {
		return View{}, fmt.Errorf("%w: %s", ErrNotFound, eventID)
	}
	return v, err
}
