package outbox

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// List pages through the events of one status, oldest first, each page
// giving the cursor of the next until the last (cursor 0); Count counts
// them by status and ages the oldest pending one.
func TestListPagesAndCount(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	var events []Event
	for i := range 12 {
		events = append(events, event(t, OrderCreated, fmt.Sprintf("o%02d", i), t0.Add(time.Duration(i)*time.Minute)))
	}
	stored := store(t, db, events...)
	// 7 pending (o00, o03, o04, o06, o07, o09, o10), 3 delivered, 2 dead.
	delivered := t0.Add(time.Hour)
	for _, i := range []int{1, 5, 8} {
		require.NoError(t, db.Model(&Event{}).Where("id = ?", stored[i].ID).
			Updates(map[string]any{"status": StatusDelivered, "delivered_at": delivered}).Error)
	}
	for _, i := range []int{2, 11} {
		require.NoError(t, db.Model(&Event{}).Where("id = ?", stored[i].ID).Update("status", StatusDead).Error)
	}

	var pages [][]string
	var after uint64
	for {
		page, next, err := List(t.Context(), db, StatusPending, after, 3)
		require.NoError(t, err)
		var ids []string
		for _, v := range page {
			ids = append(ids, v.OrderID)
			assert.Equal(t, StatusPending, v.Status)
			require.NotNil(t, v.NextAt, "a pending event shows its next try")
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

	// A page that ends exactly with the last event has no next page.
	page, next, err := List(t.Context(), db, StatusDelivered, 0, 3)
	require.NoError(t, err)
	assert.Len(t, page, 3)
	assert.Zero(t, next)
	require.NotNil(t, page[0].DeliveredAt)
	assert.True(t, page[0].DeliveredAt.Equal(delivered))
	assert.Nil(t, page[0].NextAt)
	var m Message
	require.NoError(t, json.Unmarshal(page[0].Event, &m), "the event as delivered")
	assert.Equal(t, page[0].EventID, m.ID)

	// A limit below 1 lists one event.
	page, next, err = List(t.Context(), db, StatusDead, 0, 0)
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, "o02", page[0].OrderID)
	page, next, err = List(t.Context(), db, StatusDead, next, 0)
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, "o11", page[0].OrderID)
	assert.Zero(t, next)

	c, err := Count(t.Context(), db, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, Counts{Pending: 7, Delivered: 3, Dead: 2, OldestPending: time.Hour}, c)

	require.NoError(t, db.Where("status = ?", StatusPending).Delete(&Event{}).Error)
	c, err = Count(t.Context(), db, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, Counts{Delivered: 3, Dead: 2}, c, "no pending event: no age")
}
