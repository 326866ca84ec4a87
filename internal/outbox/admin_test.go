package outbox

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

// deliver makes the deliveries of the events stored since receiver name
// was registered, as a dispatcher's round does before it sends.
func deliver(t *testing.T, db *gorm.DB, name string) {
	t.Helper()
	for {
		n, err := fanOut(t.Context(), db, name)
		require.NoError(t, err)
		if n < fanOutBatch {
			return
		}
	}
}

// List pages through the deliveries of one status, to one receiver or to
// all, in the order they were made, each page giving the cursor of the
// next until the last (cursor 0); Count counts them by receiver and status
// and ages the oldest pending one.
func TestListPagesAndCount(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	var events []Event
	for i := range 12 {
		events = append(events, event(t, OrderCreated, fmt.Sprintf("o%02d", i), t0.Add(time.Duration(i)*time.Minute)))
	}
	registered(t, db, "test", "crm")
	stored := store(t, db, events...)
	deliver(t, db, "test")
	// To test: 7 pending (o00, o03, o04, o06, o07, o09, o10), 3 delivered,
	// 2 dead.
	delivered := t0.Add(time.Hour)
	for _, i := range []int{1, 5, 8} {
		require.NoError(t, db.Model(&Delivery{}).Where("event_row = ? AND receiver = 'test'", stored[i].ID).
			Updates(map[string]any{"status": StatusDelivered, "delivered_at": delivered}).Error)
	}
	for _, i := range []int{2, 11} {
		require.NoError(t, db.Model(&Delivery{}).Where("event_row = ? AND receiver = 'test'", stored[i].ID).
			Update("status", StatusDead).Error)
	}
	// To crm: every one pending.
	deliver(t, db, "crm")

	var pages [][]string
	var after uint64
	for {
		page, next, err := List(t.Context(), db, StatusPending, "test", after, 3)
		require.NoError(t, err)
		var ids []string
		for _, v := range page {
			ids = append(ids, v.OrderID)
			assert.Equal(t, StatusPending, v.Status)
			assert.Equal(t, "test", v.Receiver)
			require.NotNil(t, v.NextAt, "a pending delivery shows its next try")
			assert.Nil(t, v.DeliveredAt)
		}
		pages = append(pages, ids)
		if next == 0 {
			break
		}
		require.Less(t, len(pages), 5, "the cursor moves on")
		after = next
	}
	assert.Equal(t, [][]string{{"o00", "o03", "o04"}, {"o06", "o07", "o09"}, {"o10"}}, pages)

	all, next, err := List(t.Context(), db, StatusPending, "", 0, MaxPage)
	require.NoError(t, err)
	assert.Zero(t, next)
	assert.Len(t, all, 7+12, "every receiver's")
	crm, _, err := List(t.Context(), db, StatusPending, "crm", 0, MaxPage)
	require.NoError(t, err)
	require.Len(t, crm, 12)
	assert.Equal(t, "o00", crm[0].OrderID)
	assert.Equal(t, "crm", crm[0].Receiver)

	// A page that ends exactly with the last delivery has no next page.
	page, next, err := List(t.Context(), db, StatusDelivered, "", 0, 3)
	require.NoError(t, err)
	assert.Len(t, page, 3)
	assert.Zero(t, next)
	require.NotNil(t, page[0].DeliveredAt)
	assert.True(t, page[0].DeliveredAt.Equal(delivered))
	assert.Nil(t, page[0].NextAt)
	var m Message
	require.NoError(t, json.Unmarshal(page[0].Event, &m), "the event as delivered")
	assert.Equal(t, page[0].EventID, m.ID)
	assert.True(t, page[0].CreatedAt.Equal(t0.Add(time.Minute)), "the event's creation: %v", page[0].CreatedAt)

	// A limit below 1 lists one delivery.
	page, next, err = List(t.Context(), db, StatusDead, "test", 0, 0)
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, "o02", page[0].OrderID)
	page, next, err = List(t.Context(), db, StatusDead, "test", next, 0)
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, "o11", page[0].OrderID)
	assert.Zero(t, next)

	_, _, err = List(t.Context(), db, StatusDead, "nobody", 0, 10)
	assert.ErrorIs(t, err, ErrNotFound)
	_, _, err = List(t.Context(), db, StatusDead, everyReceiver, 0, 10)
	assert.ErrorIs(t, err, ErrNotFound, "the deliveries of every receiver from before are no receiver's")

	counts, err := Count(t.Context(), db, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, []ReceiverCounts{
		{Receiver: "crm", Counts: Counts{Pending: 12, OldestPending: time.Hour}},
		{Receiver: "test", Counts: Counts{Pending: 7, Delivered: 3, Dead: 2, OldestPending: time.Hour}},
	}, counts)

	// Events not yet made deliveries count as pending, from their
	// creation: past the receiver's cursor, or still in a batch.
	require.NoError(t, db.Where("receiver = 'test' AND status = ?", StatusPending).Delete(&Delivery{}).Error)
	store(t, db, event(t, OrderCreated, "late", t0.Add(-time.Minute)))
	require.NoError(t, NewWriter(true).Append(db, event(t, OrderCreated, "queued", t0.Add(-2*time.Minute))))
	assert.Equal(t, Counts{Pending: 2, Delivered: 3, Dead: 2, OldestPending: time.Hour + 2*time.Minute},
		countsOf(t, db, "test", t0.Add(time.Hour)))

	drain(t, db)
	_, err = fanOut(t.Context(), db, "test")
	require.NoError(t, err)
	require.NoError(t, db.Model(&Delivery{}).Where("receiver = 'test' AND status = ?", StatusPending).
		Updates(map[string]any{"status": StatusDelivered, "delivered_at": delivered}).Error)
	assert.Equal(t, Counts{Delivered: 5, Dead: 2}, countsOf(t, db, "test", t0.Add(time.Hour)), "nothing pending: no age")
}
