package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
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
	hook, err := NewWebhook(srv.URL, []string{key}, nil)
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

// Three dispatchers on one outbox deliver every event, never one event
// from two of them at once, and each order's events in order, while the
// sink refuses some sends.
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
	stored := store(t, db, events...)
	s := newSink()
	s.expect(stored...)
	s.hold = time.Millisecond
	s.refuse = func(e *Event, tries int) bool { return tries == 0 && e.ID%5 == 0 }

	for range 3 {
		run(t, NewDispatcher(db, Options{Sinks: []Sink{s}, Concurrency: 4, Poll: 2 * time.Millisecond, Backoff: fast, Log: quiet}))
	}
	testutil.Eventually(t, 40*time.Second, "every event acknowledged", func() bool { return s.ackedAll(stored) })
	testutil.Eventually(t, 10*time.Second, "every event recorded delivered", func() bool {
		c, err := Count(t.Context(), db, time.Now())
		return err == nil && c.Delivered == int64(len(stored)) && c.Pending == 0
	})

	_, problems := s.report()
	assert.Empty(t, problems)
}

// Two dispatchers claiming at once lease each event to one of them only:
// another dispatcher leases the events between this one's scan and its
// lease, and this one then gets none of them.
func TestClaimRaceLeasesEachEventOnce(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	stored := store(t, db, event(t, OrderCreated, "A", t0), event(t, OrderCreated, "B", t0), event(t, OrderCreated, "C", t0))
	opts := Options{Now: testutil.NewClock(t0).Now, Log: quiet}
	second := NewDispatcher(db, opts)

	sqlDB, err := db.DB()
	require.NoError(t, err)
	racing, err := gorm.Open(gormmysql.New(gormmysql.Config{Conn: sqlDB}), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	// The other dispatcher claims just before this one's first UPDATE:
	// after its scan, before its lease.
	var once sync.Once
	var taken []Event
	var takenErr error
	require.NoError(t, racing.Callback().Update().Before("gorm:update").Register("test:race", func(*gorm.DB) {
		once.Do(func() { taken, _, takenErr = second.claim(context.Background()) })
	}))
	first := NewDispatcher(racing, opts)

	got, _, err := first.claim(t.Context())
	require.NoError(t, err)
	require.NoError(t, takenErr)
	assert.Len(t, taken, len(stored), "the other dispatcher leased them all")
	assert.Empty(t, got, "none leased again")
	for _, e := range stored {
		owner := load(t, db, e.EventID).LeaseOwner
		require.NotNil(t, owner)
		assert.Equal(t, *taken[0].LeaseOwner, *owner, "the lease stays the other's")
	}
}

// A dispatcher that leased events and died before recording any outcome
// keeps them from the others until its lease ends; then another delivers
// them, in order per order. The lease is crossed with the injected clock.
func TestLeaseOfDeadDispatcherPasses(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clock := testutil.NewClock(t0)
	stored := store(t, db, event(t, OrderCreated, "A", t0), event(t, OrderPaid, "A", t0), event(t, OrderCreated, "B", t0))
	s := newSink()
	s.expect(stored...)
	opts := Options{Sinks: []Sink{s}, Timeout: time.Second, Now: clock.Now, Log: quiet}

	died := NewDispatcher(db, opts)
	claimed, _, err := died.claim(t.Context())
	require.NoError(t, err)
	require.Len(t, claimed, 2, "the first event of each order")

	other := NewDispatcher(db, opts)
	clock.Advance(died.lease - time.Second)
	n, err := other.Step(t.Context())
	require.NoError(t, err)
	assert.Zero(t, n, "leased events are not taken before the lease ends")
	assert.Zero(t, s.sends(stored[0].EventID)+s.sends(stored[2].EventID))

	clock.Advance(2 * time.Second)
	n, err = other.Step(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 2, n, "taken once the lease is over")
	n, err = other.Step(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "then the next event of order A")
	for _, e := range stored {
		assert.Equal(t, StatusDelivered, load(t, db, e.EventID).Status)
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

	e := load(t, db, id)
	assert.Equal(t, StatusDelivered, e.Status, "the refusal of the dispatcher that lost the lease is not recorded")
	assert.Zero(t, e.Attempts)
	assert.Nil(t, e.LeaseOwner)
}

// A refused event is retried on a jittered exponential back-off, not
// before its next try, until its retry window (MaxAge) is over: it is then
// dead, counted, listed with its last error, and the later events of its
// order go on.
func TestRefusedEventBacksOffThenDies(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clock := testutil.NewClock(t0)
	stored := store(t, db, event(t, OrderCreated, "A", t0), event(t, OrderPaid, "A", t0), event(t, OrderCreated, "B", t0))
	first, next, other := stored[0], stored[1], stored[2]
	s := newSink()
	s.refuse = func(e *Event, _ int) bool { return e.EventID == first.EventID }
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	bo := backoff.Exponential{Min: time.Second, Max: 8 * time.Second}
	const maxAge = time.Minute
	d := NewDispatcher(db, Options{Sinks: []Sink{s}, MaxAge: maxAge, Backoff: bo, Now: clock.Now, Log: quiet, Metrics: m})

	for {
		_, err := d.Step(t.Context())
		require.NoError(t, err)
		e := load(t, db, first.EventID)
		require.Equal(t, s.sends(first.EventID), e.Attempts, "every refusal counted")
		if e.Status == StatusDead {
			assert.GreaterOrEqual(t, clock.Now().Sub(t0), maxAge, "dead only once the window is over")
			break
		}
		require.Equal(t, StatusPending, e.Status)
		require.Less(t, clock.Now().Sub(t0), maxAge, "refused within the window: retried")
		require.Zero(t, s.sends(next.EventID), "the next event of the order waits")
		wait := e.NextAt.Sub(clock.Now())
		full := bo.Delay(e.Attempts - 1)
		assert.GreaterOrEqual(t, wait, full/2-time.Millisecond, "attempt %d", e.Attempts)
		assert.LessOrEqual(t, wait, full, "attempt %d", e.Attempts)

		clock.Advance(wait - time.Millisecond)
		_, err = d.Step(t.Context())
		require.NoError(t, err)
		require.Equal(t, e.Attempts, s.sends(first.EventID), "not retried before its next try")
		clock.Advance(time.Millisecond)
	}
	tries := s.sends(first.EventID)
	assert.Greater(t, tries, 5, "retried for the whole window")

	n, err := d.Step(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the next event of the order goes on")
	assert.Equal(t, StatusDelivered, load(t, db, next.EventID).Status)
	assert.Equal(t, StatusDelivered, load(t, db, other.EventID).Status)

	dead, _, err := List(t.Context(), db, StatusDead, 0, 10)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	assert.Equal(t, first.EventID, dead[0].EventID)
	assert.Equal(t, tries, dead[0].Attempts)
	require.NotNil(t, dead[0].LastError)
	assert.Equal(t, "test: refused", *dead[0].LastError)

	assert.Equal(t, float64(tries-1), metric(t, reg, "seckill_events_retried_total", OrderCreated))
	assert.Equal(t, float64(1), metric(t, reg, "seckill_events_dead_total", OrderCreated))
	assert.Equal(t, float64(1), metric(t, reg, "seckill_events_delivered_total", OrderCreated))
	assert.Equal(t, float64(1), metric(t, reg, "seckill_events_delivered_total", OrderPaid))
	require.NoError(t, d.gauge(t.Context()))
	assert.Equal(t, float64(1), metric(t, reg, "seckill_events_dead", ""))
	assert.Equal(t, float64(0), metric(t, reg, "seckill_events_pending", ""))
	assert.Equal(t, float64(0), metric(t, reg, "seckill_events_oldest_pending_age_seconds", ""))
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
	stored := store(t, db, events...)
	s := newSink()
	s.refuse = func(*Event, int) bool { return true }
	bo := backoff.Exponential{Min: 10 * time.Second, Max: time.Minute}
	n, err := NewDispatcher(db, Options{Sinks: []Sink{s}, Backoff: bo, Now: clock.Now, Log: quiet}).Step(t.Context())
	require.NoError(t, err)
	require.Equal(t, len(stored), n)

	waits := map[time.Duration]bool{}
	for _, e := range stored {
		wait := load(t, db, e.EventID).NextAt.Sub(t0)
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
	e := load(t, db, id)
	assert.Equal(t, StatusDelivered, e.Status)
	assert.Nil(t, e.LeaseOwner)
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

// Redeliver makes a dead event pending again with a fresh retry window (a
// refusal right after is retried, not dead at once), keeping its id; it
// gets delivered. A delivered event is sent again the same way. An unknown
// id is ErrNotFound.
func TestRedeliver(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clock := testutil.NewClock(t0)
	stored := store(t, db, event(t, OrderCreated, "A", t0))
	id := stored[0].EventID
	var refusing atomic.Bool
	refusing.Store(true)
	s := newSink()
	s.refuse = func(*Event, int) bool { return refusing.Load() }
	d := NewDispatcher(db, Options{Sinks: []Sink{s}, MaxAge: time.Minute, Now: clock.Now, Log: quiet})

	_, err := d.Step(t.Context())
	require.NoError(t, err)
	clock.Advance(2 * time.Minute)
	_, err = d.Step(t.Context())
	require.NoError(t, err)
	require.Equal(t, StatusDead, load(t, db, id).Status)

	clock.Advance(time.Hour)
	v, err := Redeliver(t.Context(), db, id, clock.Now())
	require.NoError(t, err)
	assert.Equal(t, StatusPending, v.Status)
	require.NotNil(t, v.NextAt)
	assert.True(t, v.NextAt.Equal(clock.Now()), "due now: %v", v.NextAt)
	e := load(t, db, id)
	assert.True(t, e.WindowFrom.Equal(clock.Now()), "a fresh window: %v", e.WindowFrom)

	_, err = d.Step(t.Context())
	require.NoError(t, err)
	assert.Equal(t, StatusPending, load(t, db, id).Status, "refused in the fresh window: retried, not dead")

	// Redeliver is asked twice at the same instant (a double click).
	_, err = Redeliver(t.Context(), db, id, clock.Now())
	require.NoError(t, err)
	_, err = Redeliver(t.Context(), db, id, clock.Now())
	require.NoError(t, err, "a known event is found even when nothing changes")

	refusing.Store(false)
	_, err = d.Step(t.Context())
	require.NoError(t, err)
	e = load(t, db, id)
	assert.Equal(t, StatusDelivered, e.Status)
	require.NotNil(t, e.DeliveredAt)

	v, err = Redeliver(t.Context(), db, id, clock.Now())
	require.NoError(t, err)
	assert.Equal(t, StatusPending, v.Status)
	assert.Nil(t, v.DeliveredAt)
	sends := s.sends(id)
	_, err = d.Step(t.Context())
	require.NoError(t, err)
	assert.Equal(t, sends+1, s.sends(id), "a delivered event redelivered is sent again")
	assert.Equal(t, StatusDelivered, load(t, db, id).Status)
	acked, _ := s.report()
	assert.Equal(t, []string{id, id}, acked, "with the same id every time")

	_, err = Redeliver(t.Context(), db, "evt_created_nope", clock.Now())
	assert.ErrorIs(t, err, ErrNotFound)
}

// Retention deletes the delivered events older than Retention, in batches,
// and nothing else: not a recent delivered event, nor a pending or dead
// one however old.
func TestRetainDeletesOnlyOldDelivered(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clock := testutil.NewClock(t0)
	const retention = 24 * time.Hour
	const old = 2500 // three batches
	var events []Event
	for i := range old {
		events = append(events, event(t, OrderCreated, "old"+strconv.Itoa(i), t0.Add(-30*24*time.Hour)))
	}
	keep := []Event{
		event(t, OrderCreated, "recent", t0.Add(-30*24*time.Hour)),
		event(t, OrderCreated, "pending", t0.Add(-30*24*time.Hour)),
		event(t, OrderCreated, "dead", t0.Add(-30*24*time.Hour)),
	}
	require.NoError(t, NewWriter(true).Append(db, append(events, keep...)...))
	drain(t, db)
	long := t0.Add(-retention - time.Hour)
	require.NoError(t, db.Model(&Event{}).Where("order_id LIKE 'old%'").
		Updates(map[string]any{"status": StatusDelivered, "delivered_at": long}).Error)
	require.NoError(t, db.Model(&Event{}).Where("order_id = 'recent'").
		Updates(map[string]any{"status": StatusDelivered, "delivered_at": t0.Add(-retention + time.Minute)}).Error)
	require.NoError(t, db.Model(&Event{}).Where("order_id = 'dead'").Update("status", StatusDead).Error)

	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	d := NewDispatcher(db, Options{Retention: retention, Now: clock.Now, Log: quiet, Metrics: m})
	require.NoError(t, d.retain(t.Context()))

	var left []string
	require.NoError(t, db.Model(&Event{}).Order("id").Pluck("order_id", &left).Error)
	assert.Equal(t, []string{"recent", "pending", "dead"}, left)
	assert.Equal(t, float64(old), metric(t, reg, "seckill_events_deleted_total", ""))
}
