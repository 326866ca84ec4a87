package outbox

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/internal/testutil"
)

// A receiver that refuses everything holds back none of another's events:
// the other gets each event once, each order's in order, while every event
// waits for the refusing one alone, retried on its own back-off. When it
// accepts again it gets every event too, each order's in order.
func TestRefusingReceiverHoldsBackOnlyItsOwn(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clock := testutil.NewClock(t0)
	var events []Event
	for o := range 5 {
		order := fmt.Sprintf("o%d", o)
		events = append(events, event(t, OrderCreated, order, t0), event(t, OrderPaid, order, t0), event(t, PaymentRefundDue, order, t0))
	}
	registered(t, db, "dead", "fine")
	stored := store(t, db, events...)
	var refusing atomic.Bool
	refusing.Store(true)
	dead, fine := newSink(), newSink()
	dead.name, fine.name = "dead", "fine"
	dead.refuse = func(*Event, int) bool { return refusing.Load() }
	dead.expect(stored...)
	fine.expect(stored...)
	d := NewDispatcher(db, Options{Sinks: []Sink{dead, fine}, Backoff: backoff.Exponential{Min: time.Second, Max: time.Second},
		Now: clock.Now, Log: quiet})

	for range 3 {
		_, err := d.Step(t.Context())
		require.NoError(t, err)
		clock.Advance(time.Second)
	}
	acked, problems := fine.report()
	assert.Empty(t, problems)
	assert.Len(t, acked, len(stored), "each event once to the receiver that accepts")
	for _, e := range stored {
		assert.Equal(t, 1, fine.sends(e.EventID), e.EventID)
	}
	for o := range 5 {
		assert.Equal(t, 3, dead.sends(fmt.Sprintf("evt_created_o%d", o)), "the first event of each order retried, once a round")
		assert.Zero(t, dead.sends(fmt.Sprintf("evt_paid_o%d", o)), "the later ones wait for it")
	}
	c := countsOf(t, db, "dead", clock.Now())
	assert.Equal(t, int64(len(stored)), c.Pending)
	assert.Equal(t, 3*time.Second, c.OldestPending)
	assert.Equal(t, Counts{Delivered: int64(len(stored))}, countsOf(t, db, "fine", clock.Now()))

	refusing.Store(false)
	for range 3 {
		_, err := d.Step(t.Context())
		require.NoError(t, err)
	}
	assert.True(t, dead.ackedAll(stored))
	_, problems = dead.report()
	assert.Empty(t, problems, "each order's events in order to the receiver that refused")
	acked, _ = fine.report()
	assert.Len(t, acked, len(stored), "nothing more to the other")
}

// A receiver whose sends hang (a host that takes the connection and never
// answers) does not slow another: under Run, the other gets every event
// while the first send to the hanging one is still waiting.
func TestHangingReceiverDoesNotSlowTheOthers(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	now := time.Now()
	var events []Event
	for o := range 20 {
		events = append(events, event(t, OrderCreated, fmt.Sprintf("o%02d", o), now), event(t, OrderPaid, fmt.Sprintf("o%02d", o), now))
	}
	registered(t, db, "hanging", "fine")
	stored := store(t, db, events...)
	release := make(chan struct{})
	hanging, fine := newSink(), newSink()
	hanging.name, fine.name = "hanging", "fine"
	hanging.refuse = func(*Event, int) bool { <-release; return false }
	fine.expect(stored...)
	// Two sends to fine at a time: it takes it 20 rounds to get them all.
	run(t, NewDispatcher(db, Options{Sinks: []Sink{hanging, fine}, Concurrency: 2, Timeout: time.Hour, Poll: 2 * time.Millisecond,
		Backoff: fast, Log: quiet}))

	testutil.Eventually(t, 30*time.Second, "every event to the receiver that answers", func() bool { return fine.ackedAll(stored) })
	sent := func() int {
		n := 0
		for _, e := range stored {
			n += hanging.sends(e.EventID)
		}
		return n
	}
	// A slow store may have the hanging receiver's first claim end after
	// the other receiver got everything: its two sends come, and no more.
	testutil.Eventually(t, 30*time.Second, "the hanging receiver's first two sends", func() bool { return sent() >= 2 })
	assert.Equal(t, 2, sent(), "the hanging receiver's first two sends, still waiting")
	close(release)
	_, problems := fine.report()
	assert.Empty(t, problems)
}

// A receiver gets the events written after a dispatcher first had it: one
// added later does not get the events written before it came, and gets
// every later one; a redelivery by hand to it sends it an earlier one.
func TestReceiverAddedLaterGetsTheEventsFromThen(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clock := testutil.NewClock(t0)
	shop := newSink()
	shop.name = "shop"
	_, err := NewDispatcher(db, Options{Sinks: []Sink{shop}, Now: clock.Now, Log: quiet}).Step(t.Context())
	require.NoError(t, err)
	before := store(t, db, event(t, OrderCreated, "A", t0))

	crm := newSink()
	crm.name = "crm"
	d := NewDispatcher(db, Options{Sinks: []Sink{shop, crm}, Now: clock.Now, Log: quiet})
	_, err = d.Step(t.Context())
	require.NoError(t, err)
	after := store(t, db, event(t, OrderPaid, "A", t0), event(t, OrderCreated, "B", t0), event(t, OrderCancelled, "B", t0))
	crm.expect(after...)
	for range 3 {
		_, err = d.Step(t.Context())
		require.NoError(t, err)
	}
	acked, problems := crm.report()
	assert.Empty(t, problems)
	assert.ElementsMatch(t, []string{after[0].EventID, after[1].EventID, after[2].EventID}, acked)
	assert.Zero(t, crm.sends(before[0].EventID), "an event written before it came")
	assert.True(t, shop.ackedAll(append(before, after...)))

	views, err := Redeliver(t.Context(), db, before[0].EventID, "crm", clock.Now())
	require.NoError(t, err)
	require.Len(t, views, 1)
	assert.Equal(t, "crm", views[0].Receiver)
	_, err = d.Step(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, crm.sends(before[0].EventID), "sent by hand")
	assert.Equal(t, 1, shop.sends(before[0].EventID), "to that receiver only")
}

// Redeliver makes a dead delivery pending again with a fresh retry window
// (a refusal right after is retried, not dead at once), to the receiver
// named only, keeping the event's id; it gets delivered. A delivered event
// is sent again the same way, and to every receiver when none is named. An
// unknown event id or receiver is ErrNotFound.
func TestRedeliver(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clock := testutil.NewClock(t0)
	registered(t, db, "test", "fine")
	stored := store(t, db, event(t, OrderCreated, "A", t0))
	id := stored[0].EventID
	var refusing atomic.Bool
	refusing.Store(true)
	s, fine := newSink(), newSink()
	fine.name = "fine"
	s.refuse = func(*Event, int) bool { return refusing.Load() }
	d := NewDispatcher(db, Options{Sinks: []Sink{s, fine}, MaxAge: time.Minute, Now: clock.Now, Log: quiet})

	_, err := d.Step(t.Context())
	require.NoError(t, err)
	clock.Advance(2 * time.Minute)
	_, err = d.Step(t.Context())
	require.NoError(t, err)
	require.Equal(t, StatusDead, deliveryOf(t, db, id, "test").Status)
	require.Equal(t, StatusDelivered, deliveryOf(t, db, id, "fine").Status)

	clock.Advance(time.Hour)
	vs, err := Redeliver(t.Context(), db, id, "test", clock.Now())
	require.NoError(t, err)
	require.Len(t, vs, 1)
	v := vs[0]
	assert.Equal(t, "test", v.Receiver)
	assert.Equal(t, StatusPending, v.Status)
	assert.Equal(t, 2, v.Attempts, "its attempts are kept")
	require.NotNil(t, v.NextAt)
	assert.True(t, v.NextAt.Equal(clock.Now()), "due now: %v", v.NextAt)
	assert.True(t, deliveryOf(t, db, id, "test").WindowFrom.Equal(clock.Now()), "a fresh window")
	assert.Equal(t, StatusDelivered, deliveryOf(t, db, id, "fine").Status, "the other receiver's is left alone")

	_, err = d.Step(t.Context())
	require.NoError(t, err)
	assert.Equal(t, StatusPending, deliveryOf(t, db, id, "test").Status, "refused in the fresh window: retried, not dead")

	// Redeliver is asked twice at the same instant (a double click).
	_, err = Redeliver(t.Context(), db, id, "test", clock.Now())
	require.NoError(t, err)
	vs, err = Redeliver(t.Context(), db, id, "test", clock.Now())
	require.NoError(t, err)
	assert.Len(t, vs, 1, "a known delivery is found even when nothing changes")

	refusing.Store(false)
	_, err = d.Step(t.Context())
	require.NoError(t, err)
	dl := deliveryOf(t, db, id, "test")
	assert.Equal(t, StatusDelivered, dl.Status)
	require.NotNil(t, dl.DeliveredAt)

	vs, err = Redeliver(t.Context(), db, id, "", clock.Now())
	require.NoError(t, err)
	require.Len(t, vs, 2, "to every receiver")
	assert.Equal(t, []string{"fine", "test"}, []string{vs[0].Receiver, vs[1].Receiver})
	for _, v := range vs {
		assert.Equal(t, StatusPending, v.Status)
		assert.Nil(t, v.DeliveredAt)
	}
	sends, fineSends := s.sends(id), fine.sends(id)
	_, err = d.Step(t.Context())
	require.NoError(t, err)
	assert.Equal(t, sends+1, s.sends(id), "a delivered event redelivered is sent again")
	assert.Equal(t, fineSends+1, fine.sends(id))
	assert.Equal(t, StatusDelivered, deliveryOf(t, db, id, "test").Status)
	acked, _ := s.report()
	assert.Equal(t, []string{id, id}, acked, "with the same id every time")

	_, err = Redeliver(t.Context(), db, "evt_created_nope", "", clock.Now())
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = Redeliver(t.Context(), db, id, "nobody", clock.Now())
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = Redeliver(t.Context(), db, id, everyReceiver, clock.Now())
	assert.ErrorIs(t, err, ErrNotFound)
}

// A dispatcher whose sink list changes between restarts: a receiver left
// out keeps its deliveries while it is away (listed, not sent), and gets
// them when it comes back within events.retention.
func TestReceiverLeftOutKeepsItsDeliveries(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clock := testutil.NewClock(t0)
	shop, crm := newSink(), newSink()
	shop.name, crm.name = "shop", "crm"
	crm.refuse = func(*Event, int) bool { return true }
	registered(t, db, "shop", "crm")
	first := store(t, db, event(t, OrderCreated, "A", t0))
	_, err := NewDispatcher(db, Options{Sinks: []Sink{shop, crm}, Now: clock.Now, Log: quiet}).Step(context.Background())
	require.NoError(t, err)

	// Restarted without crm, for a day.
	alone := NewDispatcher(db, Options{Sinks: []Sink{shop}, Now: clock.Now, Log: quiet})
	second := store(t, db, event(t, OrderPaid, "A", t0))
	clock.Advance(24 * time.Hour)
	for range 2 {
		_, err = alone.Step(t.Context())
		require.NoError(t, err)
	}
	require.NoError(t, alone.maintain(t.Context()))
	assert.Equal(t, 1, crm.sends(first[0].EventID))
	pending, _, err := List(t.Context(), db, StatusPending, "crm", 0, 10)
	require.NoError(t, err)
	require.Len(t, pending, 1, "listed while away")
	assert.Equal(t, int64(2), countsOf(t, db, "crm", clock.Now()).Pending, "and the event it has yet to be given")

	crm.refuse = nil
	crm.expect(append(first, second...)...)
	back := NewDispatcher(db, Options{Sinks: []Sink{shop, crm}, Now: clock.Now, Log: quiet})
	for range 3 {
		_, err = back.Step(t.Context())
		require.NoError(t, err)
	}
	assert.True(t, crm.ackedAll(append(first, second...)))
	_, problems := crm.report()
	assert.Empty(t, problems)
}
