package outbox

import (
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testutil"
)

// Retention deletes the deliveries delivered more than Retention ago, in
// batches, then the events written before that of which no delivery is
// left, and nothing else: not a recent delivery, nor a pending or dead one
// however old, nor an old event another receiver has yet to get.
func TestRetainDeletesOnlyOldDelivered(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clock := testutil.NewClock(t0)
	const retention = 24 * time.Hour
	const old = 2500 // three batches
	month := t0.Add(-30 * 24 * time.Hour)
	var events []Event
	for i := range old {
		events = append(events, event(t, OrderCreated, "old"+strconv.Itoa(i), month))
	}
	keep := []Event{
		event(t, OrderCreated, "recent", month),
		event(t, OrderCreated, "pending", month),
		event(t, OrderCreated, "dead", month),
		event(t, OrderCreated, "other", month),
	}
	registered(t, db, "test", "crm")
	require.NoError(t, NewWriter(true).Append(db, append(events, keep...)...))
	drain(t, db)
	deliver(t, db, "test")
	deliver(t, db, "crm")
	long := t0.Add(-retention - time.Hour)
	delivered := func(receiver, orders string, at time.Time) {
		require.NoError(t, db.Model(&Delivery{}).Where("receiver = ? AND order_id LIKE ?", receiver, orders).
			Updates(map[string]any{"status": StatusDelivered, "delivered_at": at}).Error)
	}
	delivered("test", "%", long)
	delivered("crm", "old%", long)
	delivered("crm", "pending", long)
	delivered("crm", "dead", long)
	require.NoError(t, db.Model(&Delivery{}).Where("receiver = 'test' AND order_id = 'recent'").
		Update("delivered_at", t0.Add(-retention+time.Minute)).Error)
	require.NoError(t, db.Model(&Delivery{}).Where("receiver = 'test' AND order_id = 'pending'").
		Updates(map[string]any{"status": StatusPending, "delivered_at": nil}).Error)
	require.NoError(t, db.Model(&Delivery{}).Where("receiver = 'test' AND order_id = 'dead'").
		Updates(map[string]any{"status": StatusDead, "delivered_at": nil}).Error)
	// "recent" to crm and "other" to crm stay pending.

	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	d := NewDispatcher(db, Options{Retention: retention, Now: clock.Now, Log: quiet, Metrics: m})
	require.NoError(t, d.retain(t.Context(), clock.Now()))

	var left []string
	require.NoError(t, db.Model(&Event{}).Order("id").Pluck("order_id", &left).Error)
	assert.Equal(t, []string{"recent", "pending", "dead", "other"}, left)
	var ds []Delivery
	require.NoError(t, db.Order("receiver, event_row").Find(&ds).Error)
	var kept []string
	for _, dl := range ds {
		kept = append(kept, dl.Receiver+":"+dl.OrderID+":"+dl.Status)
	}
	assert.Equal(t, []string{"crm:recent:pending", "crm:other:pending",
		"test:recent:delivered", "test:pending:pending", "test:dead:dead"}, kept)
	assert.Equal(t, float64(old), metric(t, reg, "seckill_events_deleted_total"))
}

// A receiver no dispatcher has had for Retention is dropped with its
// deliveries, and its events go once no other receiver needs them; one
// seen since stays. The deliveries that were every receiver's before
// per-receiver state go once a receiver was registered MaxAge ago.
func TestForgetDropsReceiversNobodyHas(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clock := testutil.NewClock(t0)
	const retention = 48 * time.Hour
	registered(t, db, "gone", "kept")
	stored := store(t, db, event(t, OrderCreated, "A", t0), event(t, OrderCreated, "B", t0))
	require.NoError(t, db.Create(&Delivery{EventRow: stored[0].ID, Receiver: everyReceiver, OrderID: "A", Status: StatusDead,
		WindowFrom: t0, NextAt: t0}).Error)
	deliver(t, db, "gone")
	deliver(t, db, "kept")
	require.NoError(t, db.Model(&Delivery{}).Where("receiver = 'kept'").
		Updates(map[string]any{"status": StatusDelivered, "delivered_at": t0}).Error)
	kept := newSink()
	kept.name = "kept"
	d := NewDispatcher(db, Options{Sinks: []Sink{kept}, Retention: retention, MaxAge: time.Hour, Now: clock.Now, Log: quiet})

	clock.Advance(time.Hour / 2)
	require.NoError(t, d.maintain(t.Context()))
	var names []string
	require.NoError(t, db.Model(&registration{}).Order("name").Pluck("name", &names).Error)
	assert.Equal(t, []string{everyReceiver, "gone", "kept"}, names, "nothing is due to go yet")

	clock.Advance(retention)
	require.NoError(t, d.maintain(t.Context()))
	require.NoError(t, db.Model(&registration{}).Order("name").Pluck("name", &names).Error)
	assert.Equal(t, []string{"kept"}, names)
	var receivers []string
	require.NoError(t, db.Model(&Delivery{}).Distinct("receiver").Order("receiver").Pluck("receiver", &receivers).Error)
	assert.Empty(t, receivers, "the deliveries of the receivers that went, and kept's delivered past retention")
	var n int64
	require.NoError(t, db.Model(&Event{}).Count(&n).Error)
	assert.Zero(t, n, "no receiver needs the events")
}
