package outbox

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/testsvc"
)

// t0 is the start of the injected clocks: a whole millisecond, as the
// outbox's DATETIME(3) columns keep it.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 6_000_000, time.UTC)

// quiet discards the dispatcher's logs.
var quiet = slog.New(slog.DiscardHandler)

// openDB returns a database of its own for the test, migrated, on the real
// MariaDB of the test services.
func openDB(t testing.TB) *gorm.DB { return testsvc.MigratedMySQL(t) }

// event builds the event of type typ of order at at, as order.Store does.
func event(t testing.TB, typ, order string, at time.Time) Event {
	t.Helper()
	e, err := New(typ, order, "pay_"+order, at, OrderData{Order: map[string]any{"order_id": order, "type": typ}})
	require.NoError(t, err)
	return e
}

// store appends events in one transaction, as a change of an order does,
// and returns them as stored (with their row ids), in id order.
func store(t testing.TB, db *gorm.DB, events ...Event) []Event {
	t.Helper()
	require.NoError(t, db.Transaction(func(tx *gorm.DB) error { return NewWriter(true).Append(tx, events...) }))
	drain(t, db)
	ids := make([]string, len(events))
	for i, e := range events {
		ids[i] = e.EventID
	}
	var rows []Event
	require.NoError(t, db.Where("event_id IN ?", ids).Order("id").Find(&rows).Error)
	require.Len(t, rows, len(events))
	return rows
}

// registered registers receivers as the dispatchers that have them do when
// they start: they get the events stored after.
func registered(t testing.TB, db *gorm.DB, names ...string) {
	t.Helper()
	for _, name := range names {
		require.NoError(t, register(context.Background(), db, name, t0))
	}
}

// drain moves every batch of appended events into outbox rows.
func drain(t testing.TB, db *gorm.DB) {
	t.Helper()
	for {
		n, err := expand(context.Background(), db)
		require.NoError(t, err)
		if n == 0 {
			var left int64
			require.NoError(t, db.Model(&batch{}).Count(&left).Error)
			if left == 0 {
				return
			}
		}
	}
}

// deliveryOf reads the delivery of event eventID to receiver.
func deliveryOf(t testing.TB, db *gorm.DB, eventID, receiver string) Delivery {
	t.Helper()
	var d Delivery
	require.NoError(t, db.Joins("JOIN outbox e ON e.id = outbox_deliveries.event_row").
		Take(&d, "e.event_id = ? AND outbox_deliveries.receiver = ?", eventID, receiver).Error)
	return d
}

// countsOf returns the backlog of receiver, as Count gives it.
func countsOf(t testing.TB, db *gorm.DB, receiver string, now time.Time) Counts {
	t.Helper()
	all, err := Count(context.Background(), db, now)
	require.NoError(t, err)
	for _, c := range all {
		if c.Receiver == receiver {
			return c.Counts
		}
	}
	t.Fatalf("no receiver %s among %+v", receiver, all)
	return Counts{}
}

// secret returns a new whsec_ signing key.
func secret() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// sink is a Sink for the tests: it acknowledges an event unless refuse
// says otherwise, and checks on every Send two promises of the dispatcher
// — an event is never sent while a send of it is in flight (one dispatcher
// at a time), and never before the earlier events of its order given to
// expect are acknowledged (order per order) — noting every breach in
// problems.
type sink struct {
	// refuse, when set, refuses the send of e that follows tries earlier
	// ones.
	refuse func(e *Event, tries int) bool
	// hold is how long a send takes (less when its context ends first).
	hold time.Duration

	// name is the receiver's; "test" when empty.
	name string

	mu       sync.Mutex
	written  map[string][]Event // by order, for the order check
	tries    map[string]int
	acks     map[string]int
	acked    []string // event ids as acknowledged
	inFlight map[string]bool
	problems []string
}

func newSink() *sink {
	return &sink{written: map[string][]Event{}, tries: map[string]int{}, acks: map[string]int{}, inFlight: map[string]bool{}}
}

// expect gives the sink the stored events whose order per order it checks.
func (s *sink) expect(events ...Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range events {
		s.written[e.OrderID] = append(s.written[e.OrderID], e)
	}
}

func (s *sink) Name() string {
	if s.name == "" {
		return "test"
	}
	return s.name
}

func (s *sink) Send(ctx context.Context, e *Event) error {
	s.mu.Lock()
	if s.inFlight[e.EventID] {
		s.problems = append(s.problems, e.EventID+" sent while a send of it was in flight")
	}
	for _, w := range s.written[e.OrderID] {
		if w.ID < e.ID && s.acks[w.EventID] == 0 {
			s.problems = append(s.problems, fmt.Sprintf("%s sent before %s of its order was acknowledged", e.EventID, w.EventID))
		}
	}
	s.inFlight[e.EventID] = true
	tries := s.tries[e.EventID]
	s.tries[e.EventID]++
	s.mu.Unlock()
	refused := s.refuse != nil && s.refuse(e, tries)

	if s.hold > 0 {
		select {
		case <-time.After(s.hold):
		case <-ctx.Done():
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inFlight, e.EventID)
	if refused {
		return errors.New("refused")
	}
	s.acks[e.EventID]++
	s.acked = append(s.acked, e.EventID)
	return nil
}

// sends is how many times e was sent.
func (s *sink) sends(eventID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tries[eventID]
}

// ackedAll reports whether every event was acknowledged at least once.
func (s *sink) ackedAll(events []Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range events {
		if s.acks[e.EventID] == 0 {
			return false
		}
	}
	return true
}

// report returns the acknowledged ids in order and the breaches seen.
func (s *sink) report() (acked, problems []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.acked...), append([]string(nil), s.problems...)
}

// run runs d until the returned stop is called (also at the end of the
// test); stop waits for Run to return.
func run(t testing.TB, d *Dispatcher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

// metric reads from reg the counter or gauge name, its series with the
// labels given as name, value pairs.
func metric(t testing.TB, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			match := true
			for i := 0; i+1 < len(labels); i += 2 {
				match = match && have[labels[i]] == labels[i+1]
			}
			if !match {
				continue
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s%v", name, labels)
	return 0
}
