package outbox

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

// Writers append the events of each order's changes one transaction after
// another (created, in batches of many orders as the drain writes them,
// then paid, then cancelled), while three dispatchers expand at once. Every
// event becomes one outbox row, and the rows of each order are in the order
// its changes were committed.
func TestExpandKeepsEachOrdersOrder(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	w := NewWriter(true)
	const writers, rounds, perBatch = 4, 10, 20
	var writing sync.WaitGroup
	var done atomic.Bool
	for g := range writers {
		writing.Go(func() {
			for r := range rounds {
				orders := make([]string, perBatch)
				created := make([]Event, perBatch)
				for i := range orders {
					orders[i] = fmt.Sprintf("w%d-r%d-o%d", g, r, i)
					created[i] = event(t, OrderCreated, orders[i], t0)
				}
				assert.NoError(t, db.Transaction(func(tx *gorm.DB) error { return w.Append(tx, created...) }))
				for _, typ := range []string{OrderPaid, OrderCancelled} {
					for _, o := range orders {
						assert.NoError(t, db.Transaction(func(tx *gorm.DB) error { return w.Append(tx, event(t, typ, o, t0)) }))
					}
				}
			}
		})
	}
	var expanding sync.WaitGroup
	for range 3 {
		expanding.Go(func() {
			for {
				n, err := expand(context.Background(), db)
				assert.NoError(t, err)
				if n == 0 && done.Load() {
					return
				}
			}
		})
	}
	writing.Wait()
	done.Store(true)
	expanding.Wait()
	drain(t, db)

	var rows []Event
	require.NoError(t, db.Order("id").Find(&rows).Error)
	require.Len(t, rows, writers*rounds*perBatch*3, "every event once")
	seen := map[string][]string{}
	for _, e := range rows {
		seen[e.OrderID] = append(seen[e.OrderID], e.Type)
	}
	for o, types := range seen {
		assert.Equal(t, []string{OrderCreated, OrderPaid, OrderCancelled}, types, "order %s", o)
	}
}

// The audit sees an event still in its batch with the change it belongs to:
// neither a missing event nor an orphan, until it is moved; and an event in
// a batch whose change SQL does not have is an orphan.
func TestAuditReadsEventsStillInBatches(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	order := func(id string) {
		require.NoError(t, db.Exec(`INSERT INTO orders (order_id, sku_id, user_id, qty, price_cents, status, created_at, persisted_at, expires_at, updated_at)
			VALUES (?, 1, 'u', 1, 100, 'pending_payment', ?, ?, ?, ?)`, id, now, now, now.Add(time.Hour), now).Error)
	}
	order("A")
	order("B")
	require.NoError(t, register(t.Context(), db, "shop", now))
	store(t, db, event(t, OrderCreated, "A", now))
	require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
		return NewWriter(true).Append(tx, event(t, OrderCreated, "B", now), event(t, OrderCreated, "ghost", now))
	}))

	rep, err := Audit(t.Context(), db, now.Add(time.Second), time.Hour)
	require.NoError(t, err)
	assert.Empty(t, rep.Missing, "B's event is in a batch")
	assert.Equal(t, []Gap{{Type: OrderCreated, Count: 1, Sample: []string{"ghost"}}}, rep.Orphans)
	require.Len(t, rep.Receivers, 1)
	assert.Equal(t, "shop", rep.Receivers[0].Receiver)
	assert.EqualValues(t, 3, rep.Receivers[0].Pending, "to the receiver: one past its cursor, two in a batch")

	drain(t, db)
	rep, err = Audit(t.Context(), db, now.Add(time.Second), time.Hour)
	require.NoError(t, err)
	assert.Empty(t, rep.Missing)
	assert.Equal(t, []Gap{{Type: OrderCreated, Count: 1, Sample: []string{"ghost"}}}, rep.Orphans)

	order("C")
	rep, err = Audit(t.Context(), db, now.Add(time.Second), time.Hour)
	require.NoError(t, err)
	assert.Equal(t, []Gap{{Type: OrderCreated, Count: 1, Sample: []string{"C"}}}, rep.Missing)
}
