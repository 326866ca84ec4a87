package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/internal/testutil"
	"github.com/seckill/seckill/internal/webhook"
)

// fast is the schedule of the tests that run dispatchers on the real clock.
var fast = backoff.Exponential{Min: 2 * time.Millisecond, Max: 20 * time.Millisecond}

// The events of one order reach a webhook in the order they were written
// even when the receiver refuses the first of them (500) several times, and
// that refusal holds up no other order: the receiver keeps refusing until
// every event of the other orders has arrived, which would never happen if
// they waited behind it.
func TestOrderOfEventsSurvivesRefusals(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	now := time.Now()
	registered(t, db, "shop")
	a := store(t, db, event(t, OrderCreated, "A", now), event(t, OrderPaid, "A", now), event(t, OrderCancelled, "A", now))
	others := store(t, db, event(t, OrderCreated, "B", now), event(t, OrderPaid, "B", now), event(t, OrderCreated, "C", now))

	key := secret()
	verifier, err := webhook.NewVerifier([]string{key})
	require.NoError(t, err)
	var mu sync.Mutex
	var received []string // event ids as accepted
	refusals := 0
	othersIn := func() bool {
		for _, e := range others {
			if !slices.Contains(received, e.EventID) {
				return false
			}
		}
		return true
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := verifier.Verify(body, r.Header); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var m Message
		if err := json.Unmarshal(body, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if m.ID == a[0].EventID && (refusals < 3 || !othersIn()) {
			refusals++
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		received = append(received, m.ID)
	}))
	t.Cleanup(srv.Close)
	hook, err := NewWebhook("shop", srv.URL, []string{key}, Format{}, nil)
	require.NoError(t, err)

	run(t, NewDispatcher(db, Options{Sinks: []Sink{hook}, Poll: 2 * time.Millisecond, Backoff: fast, Log: quiet}))
	all := append(slices.Clone(a), others...)
	testutil.Eventually(t, 30*time.Second, "every event accepted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range all {
			if !slices.Contains(received, e.EventID) {
				return false
			}
		}
		return true
	})

	mu.Lock()
	defer mu.Unlock()
	assert.GreaterOrEqual(t, refusals, 3)
	var ofA []string
	for _, id := range received {
		if slices.ContainsFunc(a, func(e Event) bool { return e.EventID == id }) {
			ofA = append(ofA, id)
		}
	}
	assert.Equal(t, []string{a[0].EventID, a[1].EventID, a[2].EventID}, ofA, "order A's events in the order written, each once")
}

// Three dispatchers on one outbox, each with the same two sinks, deliver
// every event to each sink, never one delivery from two of them at once,
// and each order's events in order to each sink, while each sink refuses
// some sends of its own.
func TestConcurrentDispatchersShareTheOutbox(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	now := time.Now()
	var events []Event
	for o := range 40 {
		for _, typ := range []string{OrderCreated, OrderPaid, OrderCancelled, OrderFailed} {
			events = append(events, event(t, typ, fmt.Sprintf("o%02d", o), now))
		}
	}
	registered(t, db, "shop", "crm")
	stored := store(t, db, events...)
	shop, crm := newSink(), newSink()
	shop.name, crm.name = "shop", "crm"
	for _, s := range []*sink{shop, crm} {
		s.expect(stored...)
		s.hold = time.Millisecond
	}
	shop.refuse = func(e *Event, tries int) bool { return tries == 0 && e.ID%5 == 0 }
	crm.refuse = func(e *Event, tries int) bool { return tries < 2 && e.ID%3 == 0 }

	for range 3 {
		run(t, NewDispatcher(db, Options{Sinks: []Sink{shop, crm}, Concurrency: 4, Poll: 2 * time.Millisecond, Backoff: fast, Log: quiet}))
	}
	for _, s := range []*sink{shop, crm} {
		testutil.Eventually(t, 40*time.Second, s.name+" acknowledged every event", func() bool { return s.ackedAll(stored) })
		testutil.Eventually(t, 10*time.Second, "every delivery to "+s.name+" recorded", func() bool {
			c := countsOf(t, db, s.name, time.Now())
			return c.Delivered == int64(len(stored)) && c.Pending == 0
		})
		acked, problems := s.report()
		assert.Empty(t, problems, s.name)
		assert.Len(t, acked, len(stored), "%s: each event acknowledged once", s.name)
	}
	var n int64
	require.NoError(t, db.Model(&Delivery{}).Where("receiver IN ?", []string{"shop", "crm"}).Count(&n).Error)
	assert.Equal(t, int64(2*len(stored)), n, "one delivery per event and sink")
}

// Two dispatchers claiming at once lease each delivery to one of them only:
// another dispatcher leases the deliveries between this one's scan and its
// lease, and this one then gets none of them.
func TestClaimRaceLeasesEachDeliveryOnce(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	registered(t, db, "test")
	stored := store(t, db, event(t, OrderCreated, "A", t0), event(t, OrderCreated, "B", t0), event(t, OrderCreated, "C", t0))
	_, err := fanOut(t.Context(), db, "test")
	require.NoError(t, err)

	sqlDB, err := db.DB()
	require.NoError(t, err)
	racing, err := gorm.Open(gormmysql.New(gormmysql.Config{Conn: sqlDB}), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	// The other dispatcher claims just before this one's first UPDATE:
	// after its scan, before its lease.
	var once sync.Once
	var taken []Delivery
	var takenErr error
	require.NoError(t, racing.Callback().Update().Before("gorm:update").Register("test:race", func(*gorm.DB) {
		once.Do(func() { taken, _, _, takenErr = claim(context.Background(), db, "test", 32, t0, time.Minute) })
	}))

	got, _, _, err := claim(t.Context(), racing, "test", 32, t0, time.Minute)
	require.NoError(t, err)
	require.NoError(t, takenErr)
	assert.Len(t, taken, len(stored), "the other dispatcher leased them all")
	assert.Empty(t, got, "none leased again")
	for _, e := range stored {
		owner := deliveryOf(t, db, e.EventID, "test").LeaseOwner
		require.NotNil(t, owner)
		assert.Equal(t, *taken[0].LeaseOwner, *owner, "the lease stays the other's")
	}
}

// Four dispatchers registering the same new receiver at once register it
// once: it gets one copy of the deliveries that were every receiver's
// before per-receiver state, and, fanning out at once, one delivery of
// each event stored after.
func TestConcurrentRegistrationsOfAReceiver(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	old := store(t, db, event(t, OrderCreated, "A", t0))
	// It is one pending from before per-receiver state.
	require.NoError(t, db.Create(&Delivery{EventRow: old[0].ID, Receiver: everyReceiver, OrderID: "A", Status: StatusPending,
		WindowFrom: t0, NextAt: t0}).Error)

	for round := range 5 {
		name := fmt.Sprintf("r%d", round)
		ds := make([]*Dispatcher, 4)
		for i := range ds {
			ds[i] = NewDispatcher(db, Options{Sinks: []Sink{&sink{name: name}}, Now: testutil.NewClock(t0).Now, Log: quiet})
		}
		errs := make([]error, len(ds))
		var wg sync.WaitGroup
		for i, d := range ds {
			wg.Go(func() { errs[i] = d.register(t.Context()) })
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		later := store(t, db, event(t, OrderCreated, name, t0))
		for i := range ds {
			wg.Go(func() { _, errs[i] = fanOut(t.Context(), db, name) })
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))

		var rows []Delivery
		require.NoError(t, db.Where("receiver = ?", name).Order("event_row").Find(&rows).Error)
		require.Len(t, rows, 2, "%s: one delivery of each", name)
		assert.Equal(t, old[0].ID, rows[0].EventRow, "the copy")
		assert.Equal(t, later[0].ID, rows[1].EventRow, "the event stored after")
	}
}

// A dispatcher that leased deliveries and died before recording any
// outcome keeps them from the others until its lease ends; then another
// delivers them, in order per order. The lease is crossed with the
// injected clock.
func TestLeaseOfDeadDispatcherPasses(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clock := testutil.NewClock(t0)
	registered(t, db, "test")
	stored := store(t, db, event(t, OrderCreated, "A", t0), event(t, OrderPaid, "A", t0), event(t, OrderCreated, "B", t0))
	s := newSink()
	s.expect(stored...)
	opts := Options{Sinks: []Sink{s}, Timeout: time.Second, Now: clock.Now, Log: quiet}

	died := NewDispatcher(db, opts)
	_, err := fanOut(t.Context(), db, "test")
	require.NoError(t, err)
	claimed, _, _, err := claim(t.Context(), db, "test", 32, clock.Now(), died.lease)
	require.NoError(t, err)
	require.Len(t, claimed, 2, "the first event of each order")

	other := NewDispatcher(db, opts)
	clock.Advance(died.lease - time.Second)
	n, err := other.Step(t.Context())
	require.NoError(t, err)
	assert.Zero(t, n, "leased deliveries are not taken before the lease ends")
	assert.Zero(t, s.sends(stored[0].EventID)+s.sends(stored[2].EventID))

	clock.Advance(2 * time.Second)
	n, err = other.Step(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 2, n, "taken once the lease is over")
	n, err = other.Step(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "then the next event of order A")
	for _, e := range stored {
		assert.Equal(t, StatusDelivered, deliveryOf(t, db, e.EventID, "test").Status)
	}
	acked, problems := s.report()
	assert.Empty(t, problems)
	require.Len(t, acked, 3)
	assert.ElementsMatch(t, []string{stored[0].EventID, stored[2].EventID}, acked[:2])
	assert.Equal(t, stored[1].EventID, acked[2])
}

// A dispatcher whose delivery outlived its lease does not undo, with its
// late outcome, the delivery another dispatcher made meanwhile.
func TestLateOutcomeAfterLeaseIsIgnored(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clock := testutil.NewClock(t0)
	registered(t, db, "test")
	stored := store(t, db, event(t, OrderCreated, "A", t0))
	id := stored[0].EventID

	stuck := newSink()
	release := make(chan struct{})
	stuck.refuse = func(*Event, int) bool { <-release; return true }
	slow := NewDispatcher(db, Options{Sinks: []Sink{stuck}, Timeout: time.Minute, Now: clock.Now, Log: quiet})
	done := make(chan error, 1)
	go func() {
		_, err := slow.Step(context.Background())
		done <- err
	}()
	testutil.Eventually(t, 10*time.Second, "the slow dispatcher sending", func() bool { return stuck.sends(id) == 1 })

	clock.Advance(slow.lease + time.Second)
	fine := newSink()
	n, err := NewDispatcher(db, Options{Sinks: []Sink{fine}, Now: clock.Now, Log: quiet}).Step(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	close(release)
	require.NoError(t, <-done)

	d := deliveryOf(t, db, id, "test")
	assert.Equal(t, StatusDelivered, d.Status, "the refusal of the dispatcher that lost the lease is not recorded")
	assert.Zero(t, d.Attempts)
	assert.Nil(t, d.LeaseOwner)
}

// A refused delivery is retried on a jittered exponential back-off, not
// before its next try, until its retry window (MaxAge) is over: it is then
// dead, counted, listed with its last error, and the later events of its
// order go on to that receiver. Another receiver got every event at once.
func TestRefusedEventBacksOffThenDies(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clock := testutil.NewClock(t0)
	registered(t, db, "test", "fine")
	stored := store(t, db, event(t, OrderCreated, "A", t0), event(t, OrderPaid, "A", t0), event(t, OrderCreated, "B", t0))
	first, next, other := stored[0], stored[1], stored[2]
	s := newSink()
	s.refuse = func(e *Event, _ int) bool { return e.EventID == first.EventID }
	fine := newSink()
	fine.name = "fine"
	fine.expect(stored...)
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	bo := backoff.Exponential{Min: time.Second, Max: 8 * time.Second}
	const maxAge = time.Minute
	d := NewDispatcher(db, Options{Sinks: []Sink{s, fine}, MaxAge: maxAge, Backoff: bo, Now: clock.Now, Log: quiet, Metrics: m})

	for {
		_, err := d.Step(t.Context())
		require.NoError(t, err)
		dl := deliveryOf(t, db, first.EventID, "test")
		require.Equal(t, s.sends(first.EventID), dl.Attempts, "every refusal counted")
		if dl.Status == StatusDead {
			assert.GreaterOrEqual(t, clock.Now().Sub(t0), maxAge, "dead only once the window is over")
			break
		}
		require.Equal(t, StatusPending, dl.Status)
		require.Less(t, clock.Now().Sub(t0), maxAge, "refused within the window: retried")
		require.Zero(t, s.sends(next.EventID), "the next event of the order waits")
		require.True(t, dl.Attempts < 2 || fine.ackedAll(stored), "the other receiver has every event by the second round")
		wait := dl.NextAt.Sub(clock.Now())
		full := bo.Delay(dl.Attempts - 1)
		assert.GreaterOrEqual(t, wait, full/2-time.Millisecond, "attempt %d", dl.Attempts)
		assert.LessOrEqual(t, wait, full, "attempt %d", dl.Attempts)

		clock.Advance(wait - time.Millisecond)
		_, err = d.Step(t.Context())
		require.NoError(t, err)
		require.Equal(t, dl.Attempts, s.sends(first.EventID), "not retried before its next try")
		clock.Advance(time.Millisecond)
	}
	tries := s.sends(first.EventID)
	assert.Greater(t, tries, 5, "retried for the whole window")

	n, err := d.Step(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the next event of the order goes on")
	assert.Equal(t, StatusDelivered, deliveryOf(t, db, next.EventID, "test").Status)
	assert.Equal(t, StatusDelivered, deliveryOf(t, db, other.EventID, "test").Status)

	dead, _, err := List(t.Context(), db, StatusDead, "", 0, 10)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	assert.Equal(t, first.EventID, dead[0].EventID)
	assert.Equal(t, "test", dead[0].Receiver)
	assert.Equal(t, tries, dead[0].Attempts)
	require.NotNil(t, dead[0].LastError)
	assert.Equal(t, "refused", *dead[0].LastError)
	acked, problems := fine.report()
	assert.Empty(t, problems)
	assert.Len(t, acked, len(stored), "the other receiver got each event once")

	assert.Equal(t, float64(tries-1), metric(t, reg, "seckill_events_retried_total", "receiver", "test", "type", OrderCreated))
	assert.Equal(t, float64(0), metric(t, reg, "seckill_events_retried_total", "receiver", "fine", "type", OrderCreated))
	assert.Equal(t, float64(1), metric(t, reg, "seckill_events_dead_total", "receiver", "test", "type", OrderCreated))
	assert.Equal(t, float64(1), metric(t, reg, "seckill_events_delivered_total", "receiver", "test", "type", OrderCreated))
	assert.Equal(t, float64(2), metric(t, reg, "seckill_events_delivered_total", "receiver", "fine", "type", OrderCreated))
	assert.Equal(t, float64(1), metric(t, reg, "seckill_events_delivered_total", "receiver", "test", "type", OrderPaid))
	require.NoError(t, d.gauge(t.Context()))
	assert.Equal(t, float64(1), metric(t, reg, "seckill_events_dead", "receiver", "test"))
	assert.Equal(t, float64(0), metric(t, reg, "seckill_events_dead", "receiver", "fine"))
	assert.Equal(t, float64(0), metric(t, reg, "seckill_events_pending", "receiver", "test"))
	assert.Equal(t, float64(0), metric(t, reg, "seckill_events_oldest_pending_age_seconds", "receiver", "test"))
}

// Events refused together are retried apart: each waits between half and
// all of the first back-off, drawn at random.
func TestRetriesOfRefusedEventsSpreadOut(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clock := testutil.NewClock(t0)
	var events []Event
	for i := range 8 {
		events = append(events, event(t, OrderCreated, fmt.Sprintf("o%d", i), t0))
	}
	registered(t, db, "test")
	stored := store(t, db, events...)
	s := newSink()
	s.refuse = func(*Event, int) bool { return true }
	bo := backoff.Exponential{Min: 10 * time.Second, Max: time.Minute}
	n, err := NewDispatcher(db, Options{Sinks: []Sink{s}, Backoff: bo, Now: clock.Now, Log: quiet}).Step(t.Context())
	require.NoError(t, err)
	require.Equal(t, len(stored), n)

	waits := map[time.Duration]bool{}
	for _, e := range stored {
		wait := deliveryOf(t, db, e.EventID, "test").NextAt.Sub(t0)
		assert.GreaterOrEqual(t, wait, bo.Min/2-time.Millisecond)
		assert.LessOrEqual(t, wait, bo.Min)
		waits[wait] = true
	}
	assert.Greater(t, len(waits), 1, "the retries spread out")
}

// A dispatcher stopped while delivering lets the delivery finish and
// records it: the event is not left for another to send again.
func TestStoppedDispatcherRecordsDeliveriesInFlight(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	registered(t, db, "test")
	stored := store(t, db, event(t, OrderCreated, "A", time.Now()))
	id := stored[0].EventID
	release := make(chan struct{})
	var sendCtxErr atomic.Value
	s := newSink()
	s.refuse = func(*Event, int) bool { <-release; return false }
	d := NewDispatcher(db, Options{Sinks: []Sink{ctxSink{s, &sendCtxErr}}, Poll: 2 * time.Millisecond, Log: quiet})

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx)
	}()
	testutil.Eventually(t, 10*time.Second, "the delivery under way", func() bool { return s.sends(id) == 1 })
	cancel()
	close(release)
	testutil.ClosedWithin(t, 30*time.Second, done, "Run to return")

	assert.Nil(t, sendCtxErr.Load(), "the send was not cut short")
	dl := deliveryOf(t, db, id, "test")
	assert.Equal(t, StatusDelivered, dl.Status)
	assert.Nil(t, dl.LeaseOwner)
}

// ctxSink notes in err the error of the send's context when the send
// returns.
type ctxSink struct {
	*sink
	err *atomic.Value
}

func (c ctxSink) Send(ctx context.Context, e *Event) error {
	err := c.sink.Send(ctx, e)
	if ctx.Err() != nil {
		c.err.Store(ctx.Err())
	}
	return err
}
