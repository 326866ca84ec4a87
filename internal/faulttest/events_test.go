package faulttest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/outbox"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
	"github.com/seckill/seckill/internal/webhook"
)

// eventsFullEnv set to 1 runs TestEventsExactlyOnceByIDFull.
const eventsFullEnv = "SECKILL_FAULT_EVENTS_FULL"

// eventsSeed seeds the receiver's choice of the deliveries it refuses.
const eventsSeed = 20261113

// eventsSale is the size of an events scenario.
type eventsSale struct {
	scenario      string
	stock, buyers int
	rate          int           // shoppers arriving a second
	settle        time.Duration // generous bound for every order's event to be acknowledged
}

// TestEventsExactlyOnceByID proves that the shop hears of every order
// exactly once by id, at the size CI runs: 500 units to 2,000 buyers, one
// unit each. TestEventsExactlyOnceByIDFull is the same at 5,000 units to
// 20,000 buyers.
//
// Three processes (two `serve`, one `worker`) on a private mariadbd all run
// the dispatcher, each posting to its own path of a receiver in the test,
// which verifies every signature, refuses a third of the deliveries with
// 500 and records what it acknowledged. While deliveries flow, the process
// whose delivery the receiver is answering is killed with SIGKILL before
// the answer goes out (the shop has the event; its sender never records
// it) and started again; then MySQL is killed in the middle of another
// delivery and kept away for 10 seconds, longer than the dispatcher tries
// to record the outcome.
//
// Once every order in MySQL has its event acknowledged and nothing is
// pending: the order ids of the acknowledged order.created events are
// exactly the live orders in MySQL (order.failed exactly the failed ones),
// every event names an order MySQL has with its shopper, every 202 is in
// MySQL, sold is within the stock; an event is only ever delivered again
// under its own id with the same body, and the receiver saw no invalid
// signature. The event taken when its sender died is delivered again.
//
// The FAULT line counts the deliveries, the 500s, the ids acknowledged more
// than once (redelivered_ids) and the extra acknowledgements (duplicates).
func TestEventsExactlyOnceByID(t *testing.T) {
	testutil.SkipShort(t, "starts seckill and mariadbd processes")
	eventsOnce(t, eventsSale{scenario: "events-small", stock: 500, buyers: 2000, rate: 200, settle: 3 * time.Minute})
}

// TestEventsExactlyOnceByIDFull is TestEventsExactlyOnceByID at full size:
// 5,000 units to 20,000 buyers. It runs only with
// SECKILL_FAULT_EVENTS_FULL=1:
//
//	eval "$(./scripts/test-services.sh --env)" && SECKILL_FAULT_EVENTS_FULL=1 \
//	  go test -race -count=1 -v -timeout 30m -run '^TestEventsExactlyOnceByIDFull$' ./internal/faulttest/
func TestEventsExactlyOnceByIDFull(t *testing.T) {
	testutil.SkipShort(t, "starts seckill and mariadbd processes")
	if os.Getenv(eventsFullEnv) != "1" {
		t.Skipf("the full size (5,000 units, 20,000 buyers) runs with %s=1", eventsFullEnv)
	}
	eventsOnce(t, eventsSale{scenario: "events", stock: 5000, buyers: 20000, rate: 400, settle: 10 * time.Minute})
}

func eventsOnce(t *testing.T, sale eventsSale) {
	secret := eventsSecret(t)
	m := startMariaDB(t)
	// Before the processes: it closes after they are killed.
	r := newEventsReceiver(t, secret)
	_, prefix := testsvc.Redis(t)
	d := newDeployment(t, testsvc.Env(t, testsvc.EnvRedis), prefix, m.DSN(), map[string]string{
		// Each process posts to a path of its own (below); this one is
		// `seckill verify`'s, which only reads the outbox.
		"SECKILL_EVENTS_WEBHOOK_URL":    r.url("verify"),
		"SECKILL_EVENTS_WEBHOOK_SECRET": secret,
		"SECKILL_EVENTS_TIMEOUT":        "2s",
		"SECKILL_EVENTS_BACKOFF_MIN":    "200ms",
		"SECKILL_EVENTS_BACKOFF_MAX":    "2s",
	})
	procs := map[string]*proc{}
	start := func(name string, http bool, args ...string) {
		env := maps.Clone(d.env)
		env["SECKILL_EVENTS_WEBHOOK_URL"] = r.url(name)
		p := newProc(t, name, env, http, args...)
		p.start()
		if http {
			d.api = append(d.api, p)
		}
		procs[name] = p
	}
	start("full-1", true, "serve")
	start("full-2", true, "serve")
	start("worker-3", false, "worker")
	sku := d.seed(int64(sale.stock))

	c := d.buy(sku, "evt", sale.buyers, sale.rate)

	// The process whose delivery the receiver is answering dies: the
	// event was taken, but its sender never records it. It is started
	// again at once.
	r.waitAcked(t, max(sale.stock/10, 1), time.Minute)
	kill := r.arm("", func(sender string) { procs[sender].Kill() })
	testutil.ClosedWithin(t, time.Minute, kill.done, "a delivery to kill its sender in")
	victim := procs[kill.from]
	victim.start()

	// MySQL goes away while the receiver answers another delivery, for
	// 10 seconds: longer than the dispatcher keeps trying to record it.
	sqlDown := r.arm("", func(string) { m.kill() })
	testutil.ClosedWithin(t, time.Minute, sqlDown.done, "a delivery to stop MySQL in")
	down := time.Now()
	ackedAtStop := r.ackedIDs()
	time.Sleep(10 * time.Second)
	m.start()
	up := time.Now()

	ss := c.Wait()
	rep := d.drained(sku, 2*time.Minute)
	assert.Zero(t, rep.DeadLetters)
	drained := time.Now()
	// Not settled in time is reported, and the checks below say what is
	// missing.
	if err := r.waitSettled(d, sku, sale.settle); err != nil {
		t.Error(err)
	}
	settled := time.Now()

	checkErrorBodies(t, ss)
	f := figures{scenario: sale.scenario, recoverMS: settled.Sub(up).Milliseconds()}
	d.checkOrders(sku, accepted(ss), false, &f)
	s := d.sqlState(sku)
	assert.LessOrEqual(t, s.sold, int64(sale.stock), "sold never exceeds the stock")
	d.verify(sku)

	rs := r.snapshot()
	assert.Empty(t, rs.problems, "every delivery is signed and well-formed, and an id always carries the same body")
	assert.Zero(t, rs.invalid, "deliveries whose signature did not verify")

	// The acknowledged events against MySQL's orders: order.created for
	// each live order, order.failed for each refused one, and no event of
	// an order MySQL does not have.
	want := map[string]string{} // event id -> order id
	for id, st := range s.status {
		typ := outbox.OrderCreated
		if st == order.StatusFailed {
			typ = outbox.OrderFailed
		}
		want[eventID(typ, id)] = id
	}
	var missing, madeUp []string
	for id := range want {
		if rs.acked[id] == 0 {
			missing = append(missing, id)
		}
	}
	for id, ev := range rs.events {
		_, ok := want[id]
		if !ok || ev.user != s.users[ev.orderID] || ev.sku != sku {
			madeUp = append(madeUp, fmt.Sprintf("%s (%s of %s by %s on sku %d, acknowledged %d times)",
				id, ev.typ, ev.orderID, ev.user, ev.sku, rs.acked[id]))
		}
	}
	assert.Empty(t, first20(missing), "%d orders in MySQL whose event the shop never acknowledged (the first 20)", len(missing))
	assert.Empty(t, first20(madeUp), "%d events delivered that are not an order's in MySQL, with its kind, shopper and SKU (the first 20)", len(madeUp))
	created, failed := 0, 0
	for id := range rs.acked {
		switch rs.events[id].typ {
		case outbox.OrderCreated:
			created++
		case outbox.OrderFailed:
			failed++
		}
	}

	// The outbox holds one event per order, all delivered.
	ob := outboxRows(t, d)
	assert.Equal(t, len(want), len(ob), "one event per order in the outbox")
	var notDelivered []string
	for id, status := range ob {
		if _, ok := want[id]; !ok || status != outbox.StatusDelivered {
			notDelivered = append(notDelivered, id+" "+status)
		}
	}
	assert.Empty(t, first20(notDelivered), "%d outbox events not an order's or not delivered (the first 20)", len(notDelivered))

	// Duplicates are deliveries of an id acknowledged before: the fault
	// events, which the dispatcher could not record, and whatever else the
	// faults left unrecorded.
	duplicates, maxTries := 0, 0
	var redelivered []string
	for id, n := range rs.acked {
		if n > 1 {
			redelivered = append(redelivered, fmt.Sprintf("%s×%d", id, n))
			duplicates += n - 1
		}
	}
	sort.Strings(redelivered)
	for _, n := range rs.seen {
		maxTries = max(maxTries, n)
	}
	assert.GreaterOrEqual(t, rs.acked[kill.id], 2, "%s, taken when %s died, is delivered again", kill.id, victim.Name)

	f.recovered = len(redelivered)
	f.more = []string{
		fmt.Sprintf("stock=%d", sale.stock), fmt.Sprintf("buyers=%d", sale.buyers), fmt.Sprintf("sold=%d", s.sold),
		fmt.Sprintf("orders=%d", len(s.status)), fmt.Sprintf("created_acked=%d", created), fmt.Sprintf("failed_acked=%d", failed),
		fmt.Sprintf("deliveries=%d", rs.deliveries), fmt.Sprintf("refused_500=%d", rs.refused), fmt.Sprintf("acks=%d", rs.acks),
		fmt.Sprintf("redelivered_ids=%d", len(redelivered)), fmt.Sprintf("duplicates=%d", duplicates),
		fmt.Sprintf("max_deliveries_of_an_id=%d", maxTries), fmt.Sprintf("invalid_signatures=%d", rs.invalid),
		fmt.Sprintf("kill_event_acks=%d", rs.acked[kill.id]), fmt.Sprintf("victim_in_flight_at_kill=%d", kill.inflight),
		fmt.Sprintf("sql_stop_event_acks=%d", rs.acked[sqlDown.id]), fmt.Sprintf("acked_ids_at_sql_stop=%d", ackedAtStop),
		fmt.Sprintf("victim=%s", kill.from), fmt.Sprintf("mysql_outage_ms=%d", up.Sub(down).Milliseconds()),
		fmt.Sprintf("settled_ms_after_drain=%d", settled.Sub(drained).Milliseconds()),
		fmt.Sprintf("deliveries_by_process=%s", rs.bySenderString()),
		fmt.Sprintf("seed=%d", eventsSeed),
	}
	f.log(t)
	t.Logf("answers: %v", tally(ss))
	t.Logf("fault events: kill %s (from %s, acknowledged %d times), mysql stop %s (from %s, acknowledged %d times); acknowledged more than once: %v",
		kill.id, kill.from, rs.acked[kill.id], sqlDown.id, sqlDown.from, rs.acked[sqlDown.id], redelivered)
}

// first20 sorts ids and returns the first 20.
func first20(ids []string) []string {
	sort.Strings(ids)
	return ids[:min(len(ids), 20)]
}

// eventsSecret is a fresh whsec_ key.
func eventsSecret(t *testing.T) string {
	t.Helper()
	raw := make([]byte, 32)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	return "whsec_" + base64.StdEncoding.EncodeToString(raw)
}

// eventID is the id of order orderID's event of type typ.
func eventID(typ, orderID string) string {
	return "evt_" + strings.TrimPrefix(typ, "order.") + "_" + orderID
}

// receivedEvent is what the receiver keeps of an event's first delivery.
type receivedEvent struct {
	typ, orderID, user string
	sku                uint64
	digest             [32]byte
}

// eventFault runs once, inside the handler of the next delivery from sender
// ("" any) that the receiver acknowledges, before the answer is written.
type eventFault struct {
	sender string
	fn     func(sender string)
	done   chan struct{}
	// Set before done is closed.
	id       string // the event acknowledged when fn ran
	from     string // the process that sent it
	inflight int    // deliveries of that process being answered then
}

// eventsReceiver is the shop's end of the events: a webhook receiver that
// verifies each delivery's signature, refuses a third of them (a seeded
// draw) with 500, and records every id it saw and acknowledged. Each
// process posts to /events/<its name>.
type eventsReceiver struct {
	srv    *httptest.Server
	verify *webhook.Verifier

	mu         sync.Mutex
	rng        *mrand.Rand
	deliveries int
	refused    int
	acks       int
	invalid    int
	seen       map[string]int           // event id -> deliveries
	acked      map[string]int           // event id -> 2xx answers
	events     map[string]receivedEvent // event id -> its first delivery
	bySender   map[string]int           // process -> deliveries
	inflight   map[string]int           // process -> deliveries being answered
	problems   []string                 // the first few malformed or unsigned deliveries
	fault      *eventFault
}

func newEventsReceiver(t *testing.T, secret string) *eventsReceiver {
	t.Helper()
	v, err := webhook.NewVerifier([]string{secret})
	require.NoError(t, err)
	r := &eventsReceiver{verify: v, rng: mrand.New(mrand.NewPCG(eventsSeed, eventsSeed)),
		seen: map[string]int{}, acked: map[string]int{}, events: map[string]receivedEvent{},
		bySender: map[string]int{}, inflight: map[string]int{}}
	r.srv = httptest.NewServer(r)
	t.Cleanup(r.srv.Close)
	return r
}

// url is the events.webhook_url entry of process: the receiver
// eventsReceiverName, at the process's own path.
func (r *eventsReceiver) url(process string) string {
	return eventsReceiverName + "=" + r.srv.URL + "/events/" + process
}

// eventsReceiverName names the receiver in every process's
// events.webhook_url: one receiver, whose delivery state the processes
// share, reached by each at a path of its own.
const eventsReceiverName = "shop"

func (r *eventsReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	sender := strings.TrimPrefix(req.URL.Path, "/events/")
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	r.mu.Lock()
	r.deliveries++
	r.bySender[sender]++
	r.inflight[sender]++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inflight[sender]--
		r.mu.Unlock()
	}()
	hid := req.Header.Get(webhook.HeaderID)
	if err != nil || req.Method != http.MethodPost {
		r.problem(false, "%s %s from %s: %v", req.Method, hid, sender, err)
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if err := r.verify.Verify(body, req.Header); err != nil {
		r.problem(true, "%s from %s: %v", hid, sender, err)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var msg struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			Order struct {
				OrderID string `json:"order_id"`
				SKU     uint64 `json:"sku_id"`
				User    string `json:"user_id"`
			} `json:"order"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.ID != hid || msg.ID != eventID(msg.Type, msg.Data.Order.OrderID) {
		r.problem(false, "%s from %s: id, type and order do not agree (%v): %s", hid, sender, err, body)
		http.Error(w, "malformed", http.StatusBadRequest)
		return
	}
	ev := receivedEvent{typ: msg.Type, orderID: msg.Data.Order.OrderID, user: msg.Data.Order.User,
		sku: msg.Data.Order.SKU, digest: sha256.Sum256(body)}

	r.mu.Lock()
	r.seen[msg.ID]++
	if first, ok := r.events[msg.ID]; !ok {
		r.events[msg.ID] = ev
	} else if first.digest != ev.digest {
		r.problems = append(r.problems, fmt.Sprintf("%s from %s: another body than its first delivery's: %s", msg.ID, sender, body))
	}
	if r.rng.IntN(3) == 0 {
		r.refused++
		r.mu.Unlock()
		http.Error(w, "try again", http.StatusInternalServerError)
		return
	}
	r.acks++
	r.acked[msg.ID]++
	f := r.fault
	if f != nil && (f.sender == "" || f.sender == sender) {
		r.fault = nil
		f.id, f.from, f.inflight = msg.ID, sender, r.inflight[sender]
	} else {
		f = nil
	}
	r.mu.Unlock()
	if f != nil {
		f.fn(sender)
		close(f.done)
	}
	w.WriteHeader(http.StatusNoContent)
}

// problem records a delivery the receiver refused as malformed; unsigned
// says its signature did not verify.
func (r *eventsReceiver) problem(unsigned bool, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if unsigned {
		r.invalid++
	}
	if len(r.problems) < 20 {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
	}
}

// arm runs fn with the delivering process's name in the next delivery from
// sender ("" any) that the receiver acknowledges; the fault's done is
// closed once fn returned.
func (r *eventsReceiver) arm(sender string, fn func(sender string)) *eventFault {
	f := &eventFault{sender: sender, fn: fn, done: make(chan struct{})}
	r.mu.Lock()
	r.fault = f
	r.mu.Unlock()
	return f
}

// ackedIDs counts the event ids acknowledged at least once.
func (r *eventsReceiver) ackedIDs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.acked)
}

// waitAcked waits until n event ids were acknowledged.
func (r *eventsReceiver) waitAcked(t *testing.T, n int, limit time.Duration) {
	t.Helper()
	testutil.Eventually(t, limit, fmt.Sprintf("%d events acknowledged", n), func() bool { return r.ackedIDs() >= n })
}

// waitSettled waits until the outbox has no pending event and the receiver
// acknowledged the event of every order of sku in MySQL, and says what is
// left if that does not happen within limit. MySQL may still be coming
// back: errors are retried.
func (r *eventsReceiver) waitSettled(d *deployment, sku uint64, limit time.Duration) error {
	ctx := context.Background()
	deadline := time.Now().Add(limit)
	var why string
	for {
		why = ""
		var pending int64
		if err := d.db.QueryRowContext(ctx, `SELECT
			(SELECT COUNT(*) FROM outbox_deliveries WHERE receiver = ? AND status = ?)
			+ (SELECT COUNT(*) FROM outbox WHERE id >= (SELECT next_id FROM outbox_receivers WHERE name = ?))
			+ (SELECT COALESCE(SUM(n), 0) FROM outbox_batches)`,
			eventsReceiverName, outbox.StatusPending, eventsReceiverName).Scan(&pending); err != nil {
			why = err.Error()
		} else if pending > 0 {
			why = fmt.Sprintf("%d events pending in the outbox", pending)
		} else if unacked, err := r.unacknowledged(ctx, d, sku); err != nil {
			why = err.Error()
		} else if len(unacked) > 0 {
			why = fmt.Sprintf("%d orders without their event acknowledged, e.g. %v", len(unacked), unacked[:min(5, len(unacked))])
		}
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("events not settled in %s: %s", limit, why)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// unacknowledged lists the event ids of sku's orders in MySQL that the
// receiver has not acknowledged.
func (r *eventsReceiver) unacknowledged(ctx context.Context, d *deployment, sku uint64) ([]string, error) {
	rows, err := d.db.QueryContext(ctx, "SELECT order_id, status FROM orders WHERE sku_id = ?", sku)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			return nil, err
		}
		typ := outbox.OrderCreated
		if status == order.StatusFailed {
			typ = outbox.OrderFailed
		}
		ids = append(ids, eventID(typ, id))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, id := range ids {
		if r.acked[id] == 0 {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out, nil
}

// receiverState is a copy of what the receiver recorded.
type receiverState struct {
	deliveries, refused, acks, invalid int
	seen, acked                        map[string]int
	events                             map[string]receivedEvent
	bySender                           map[string]int
	problems                           []string
}

func (r *eventsReceiver) snapshot() receiverState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return receiverState{deliveries: r.deliveries, refused: r.refused, acks: r.acks, invalid: r.invalid,
		seen: maps.Clone(r.seen), acked: maps.Clone(r.acked), events: maps.Clone(r.events),
		bySender: maps.Clone(r.bySender), problems: append([]string(nil), r.problems...)}
}

// bySenderString is "full-1:n,full-2:n,..." in name order.
func (s receiverState) bySenderString() string {
	names := make([]string, 0, len(s.bySender))
	for n := range s.bySender {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s:%d", n, s.bySender[n])
	}
	return strings.Join(parts, ",")
}

// outboxRows returns the status of the delivery to the receiver of each
// event in the outbox ("none" before it has one), by event id, and fails
// the test on an id written twice.
func outboxRows(t *testing.T, d *deployment) map[string]string {
	t.Helper()
	rows, err := d.db.Query(`SELECT e.event_id, COALESCE(r.status, 'none') FROM outbox e
		LEFT JOIN outbox_deliveries r ON r.event_row = e.id AND r.receiver = ?`, eventsReceiverName)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, status string
		require.NoError(t, rows.Scan(&id, &status))
		_, dup := out[id]
		assert.False(t, dup, "event %s twice in the outbox", id)
		out[id] = status
	}
	require.NoError(t, rows.Err())
	return out
}
