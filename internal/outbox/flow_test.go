package outbox

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/testutil"
)

// A send that hangs holds only itself: with room for four deliveries in
// flight, every event of forty other orders arrives while it hangs (each
// slot is filled again as soon as its send ends), and only the next event
// of its own order waits for it.
func TestSlowDeliveryHoldsOnlyItself(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	now := time.Now()
	registered(t, db, "test")
	slow := store(t, db, event(t, OrderCreated, "A", now), event(t, OrderPaid, "A", now))
	var events []Event
	for o := range 40 {
		events = append(events, event(t, OrderCreated, fmt.Sprintf("o%02d", o), now))
	}
	others := store(t, db, events...)
	s := newSink()
	s.expect(slow...)
	s.expect(others...)
	release := make(chan struct{})
	s.refuse = func(e *Event, _ int) bool {
		if e.EventID == slow[0].EventID {
			<-release
		}
		return false
	}
	run(t, NewDispatcher(db, Options{Sinks: []Sink{s}, Concurrency: 4, Timeout: time.Minute, Poll: 2 * time.Millisecond, Log: quiet}))
	free := sync.OnceFunc(func() { close(release) })
	t.Cleanup(free) // before the dispatcher stops, which waits for the send

	testutil.Eventually(t, 60*time.Second, "every other order's event acknowledged while one send hangs",
		func() bool { return s.ackedAll(others) })
	assert.Equal(t, 1, s.sends(slow[0].EventID), "the slow send is still the only one of its event")
	assert.Zero(t, s.sends(slow[1].EventID), "the next event of its order waits for it")
	free()
	testutil.Eventually(t, 30*time.Second, "order A's events acknowledged", func() bool { return s.ackedAll(slow) })
	acked, problems := s.report()
	assert.Empty(t, problems)
	assert.Len(t, acked, len(slow)+len(others), "each event once")
}

// 150 order.paid events, each appended by a transaction of its own as a
// payment is, go out without waiting for one another: with room for them
// all, the dispatcher has all 150 in flight at once. A dispatcher that
// expanded a few batches, sent their events and waited for those sends
// before expanding more would never have more than a few in flight, and
// the receiver here answers none until all 150 have come.
func TestEventsOfManyTransactionsFlowAtOnce(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	now := time.Now()
	registered(t, db, "test")
	w := NewWriter(true)
	var events []Event
	for i := range 150 {
		e := event(t, OrderPaid, fmt.Sprintf("p%03d", i), now)
		require.NoError(t, db.Transaction(func(tx *gorm.DB) error { return w.Append(tx, e) }))
		events = append(events, e)
	}
	s := newSink()
	var waiting atomic.Int64
	open := make(chan struct{})
	s.refuse = func(*Event, int) bool {
		waiting.Add(1)
		<-open
		return false
	}
	run(t, NewDispatcher(db, Options{Sinks: []Sink{s}, Concurrency: 200, Timeout: time.Minute, Poll: 2 * time.Millisecond, Log: quiet}))
	free := sync.OnceFunc(func() { close(open) })
	t.Cleanup(free) // before the dispatcher stops, which waits for the sends

	testutil.Eventually(t, 60*time.Second, "all 150 sends in flight at once", func() bool { return waiting.Load() == 150 })
	free()
	testutil.Eventually(t, 30*time.Second, "every event acknowledged", func() bool { return s.ackedAll(events) })
	testutil.Eventually(t, 30*time.Second, "every delivery recorded", func() bool {
		c := countsOf(t, db, "test", time.Now())
		return c.Delivered == 150 && c.Pending == 0
	})
	acked, problems := s.report()
	assert.Empty(t, problems)
	assert.Len(t, acked, 150, "each event once")
}

// A delivery leased ahead is sent only while its lease outlasts the send:
// one whose lease would end before events.timeout is given back unsent,
// leased again and sent under the new lease. With one slot, the second of
// two deliveries leased together waits for the first, which hangs until
// the clock has moved 15 s of a 20 s lease (Timeout 10 s plus 10 s).
func TestADeliveryLeasedAheadIsSentOnlyWithinItsLease(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	registered(t, db, "test")
	start := time.Now().UTC().Truncate(time.Millisecond)
	stored := store(t, db, event(t, OrderCreated, "A", start), event(t, OrderCreated, "B", start))
	var clock atomic.Int64
	clock.Store(start.UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	release := make(chan struct{})
	var short atomic.Int32 // sends of B under a lease shorter than a send
	s := newSink()
	s.expect(stored...)
	s.refuse = func(e *Event, _ int) bool {
		switch e.EventID {
		case stored[0].EventID:
			<-release
		case stored[1].EventID:
			dl := deliveryOf(t, db, e.EventID, "test")
			if dl.LeaseUntil == nil || dl.LeaseUntil.Before(now().Add(10*time.Second)) {
				short.Add(1)
			}
		}
		return false
	}
	run(t, NewDispatcher(db, Options{Sinks: []Sink{s}, Concurrency: 1, Timeout: 10 * time.Second, Poll: 2 * time.Millisecond, Now: now, Log: quiet}))
	free := sync.OnceFunc(func() { close(release) })
	t.Cleanup(free)

	testutil.Eventually(t, 30*time.Second, "A's send under way, B leased with it", func() bool {
		var leased int64
		require.NoError(t, db.Model(&Delivery{}).Where("event_row = ? AND lease_owner IS NOT NULL", stored[1].ID).Count(&leased).Error)
		return s.sends(stored[0].EventID) == 1 && leased == 1
	})
	clock.Add(int64(15 * time.Second))
	free()
	testutil.Eventually(t, 30*time.Second, "both acknowledged", func() bool { return s.ackedAll(stored) })
	assert.Zero(t, short.Load(), "B sent under a lease that would end before its send could")
	acked, problems := s.report()
	assert.Empty(t, problems)
	assert.Len(t, acked, 2, "each event once")
}
