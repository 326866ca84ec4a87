package room

import (
	"context"
	"time"

	"github.com/seckill/seckill/internal/catalog"
)

// soldOutRetry is when a ticket of a sold-out room should look again:
// units may come back (a cancel, an expired payment).
const soldOutRetry = 5000

// retryAfter is how long a waiting ticket should wait before its next
// look: pausedRetry while admission is paused; until the pre-queue is
// drawn at the start; then about the time its
// turn takes at the admission rate, so that the whole line polls at a rate
// near the admission rate whatever its length; at least a second, at most
// 30 seconds.
func (r *Room) retryAfter(sku *catalog.SKU, st Status, now time.Time, rate float64, state string) int64 {
	var d time.Duration
	if state == Paused {
		return pausedRetry
	}
	if st.Position == 0 || now.Before(sku.StartsAt) {
		d = sku.StartsAt.Sub(now)
	} else {
		d = time.Duration(float64(st.Ahead) / rate * float64(time.Second))
	}
	return min(max(d, time.Second), 30*time.Second).Milliseconds()
}

// rate is sku's admissions per second: its own, or for a room created
// with 0, twice the orders per second the backend persisted at its best in
// the last minute, and at least Options.AdmitPerSecond.
func (r *Room) rate(ctx context.Context, sku *catalog.SKU) float64 {
	if sku.Room.AdmitPerSecond > 0 {
		return float64(sku.Room.AdmitPerSecond)
	}
	floor := float64(r.o.AdmitPerSecond)
	if r.o.Pace == nil {
		return floor
	}
	return max(floor, 2*r.o.Pace.Best(ctx))
}
