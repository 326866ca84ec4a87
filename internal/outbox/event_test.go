package outbox

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

// An event's id is the same whoever builds it, so a retry or a second
// writer cannot make a second event of one change: the type and order id
// for an order event, the payment id for a refund. Its payload is the
// message a sink delivers.
func TestNewGivesStableIDsAndPayload(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 678_901_234, time.FixedZone("X", 3600))
	e := event(t, OrderPaid, "o1", at)
	assert.Equal(t, "evt_paid_o1", e.EventID)
	assert.Equal(t, "o1", e.OrderID)
	at = at.UTC().Truncate(time.Millisecond)
	assert.True(t, e.CreatedAt.Equal(at), "written at the change's time, to the millisecond")

	var m Message
	require.NoError(t, json.Unmarshal([]byte(e.Payload), &m))
	assert.Equal(t, e.EventID, m.ID)
	assert.Equal(t, OrderPaid, m.Type)
	assert.True(t, m.Timestamp.Equal(at))
	assert.JSONEq(t, `{"order":{"order_id":"o1","type":"order.paid"}}`, string(m.Data))
	want, err := json.Marshal(m)
	require.NoError(t, err)
	assert.Equal(t, string(want), e.Payload, "as json.Marshal writes a Message")

	r1, err := New(PaymentRefundDue, "o1", "pay_1", at, OrderData{})
	require.NoError(t, err)
	r2, err := New(PaymentRefundDue, "o2", "pay_1", at.Add(time.Hour), OrderData{})
	require.NoError(t, err)
	r3, err := New(PaymentRefundDue, "o1", "pay_2", at, OrderData{})
	require.NoError(t, err)
	assert.Regexp(t, `^evt_refund_[0-9a-f]{24}$`, r1.EventID)
	assert.Equal(t, r1.EventID, r2.EventID, "one refund per payment")
	assert.NotEqual(t, r1.EventID, r3.EventID)
}

// Append writes in the caller's transaction: the events go with its commit
// and its rollback, all of them as one batch row, which a dispatcher makes
// into outbox rows; an event id written before is not written again. A
// nil Writer writes nothing.
func TestAppendFollowsTheTransaction(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	w := NewWriter(true)
	require.True(t, w.On())
	rollback := errors.New("rollback")

	err := db.Transaction(func(tx *gorm.DB) error {
		require.NoError(t, w.Append(tx, event(t, OrderCreated, "gone", t0)))
		return rollback
	})
	require.ErrorIs(t, err, rollback)

	require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
		return w.Append(tx, event(t, OrderCreated, "A", t0), event(t, OrderCreated, "B", t0))
	}))
	var batches int64
	require.NoError(t, db.Model(&batch{}).Count(&batches).Error)
	assert.EqualValues(t, 1, batches, "one row per transaction")
	require.NoError(t, register(t.Context(), db, "shop", t0))
	c := countsOf(t, db, "shop", t0.Add(time.Minute))
	assert.EqualValues(t, 2, c.Pending, "events in a batch are pending")
	assert.Equal(t, time.Minute, c.OldestPending)

	require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
		return w.Append(tx, event(t, OrderPaid, "A", t0), event(t, OrderCreated, "A", t0))
	}))
	drain(t, db)

	var off *Writer
	assert.False(t, off.On())
	assert.Nil(t, NewWriter(false))
	require.NoError(t, off.Append(db, event(t, OrderCreated, "off", t0)))

	var ids []string
	require.NoError(t, db.Model(&Event{}).Order("id").Pluck("event_id", &ids).Error)
	assert.Equal(t, []string{"evt_created_A", "evt_created_B", "evt_paid_A"}, ids)
	require.NoError(t, db.Model(&batch{}).Count(&batches).Error)
	assert.Zero(t, batches)
}
