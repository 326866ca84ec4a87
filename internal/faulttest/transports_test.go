package faulttest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/outbox"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
	"github.com/seckill/seckill/internal/webhook"
)

// transportNames are the four transports, in the order they are reported.
var transportNames = []string{"webhook", "nats", "amqp", "kafka"}

// TestEveryTransportSurvivesKill9 proves that an order's events reach every
// transport (a webhook, NATS JetStream, RabbitMQ and Kafka) in full and in
// order though the process sending them is killed with SIGKILL.
//
// Two `serve` processes on the shared MySQL (a database of their own) send
// every event to all four: a signed webhook to a receiver in the test, a
// private nats-server, a vhost of their own on RabbitMQ and a kfake cluster
// in the test reached over TCP. 600 shoppers at 60 a second buy 200 units;
// of the orders, a third are paid, a third cancelled (their units sold
// again) and a third left to expire (order.payment_timeout 8s). While
// events flow, the receiver kills one process inside one of its webhook
// deliveries, before the answer goes out, and the process is started again.
//
// Once every order in MySQL is closed and every transport has its events:
// on each transport, each order's events, told apart by id (a redelivery
// dropped as a consumer does), are exactly those its final status in MySQL
// says, in the order they were written (order.created, then order.paid,
// .cancelled or .expired; order.failed alone for an order the stock guard
// refused); no event names an order MySQL does not have; an id always
// carries the same body. The webhook delivery cut by the kill is delivered
// again, and every receiver's backlog ends delivered, with no dead letter.
// A pay or a cancel is refused only once its order's deadline has passed.
// Redeliveries are counted and logged, not failed.
func TestEveryTransportSurvivesKill9(t *testing.T) {
	testutil.SkipShort(t, "starts seckill and nats-server processes")
	const stock, buyers, rate = 200, 600, 60
	secret := eventsSecret(t)
	// The consumers come before the processes: their cleanups run after
	// the processes are killed.
	logs := map[string]*transportLog{}
	for _, name := range transportNames {
		logs[name] = newTransportLog()
	}
	hook := newHookReceiver(t, secret, logs["webhook"])
	natsSrv := testsvc.StartNATS(t)
	amqpURL := testsvc.RabbitMQ(t)
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "seckill.orders"))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	// A queue bound before the first event: an exchange drops what no queue
	// takes.
	testsvc.ConsumeAMQP(t, amqpURL, logs["amqp"].add)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() { testsvc.ConsumeNATS(ctx, natsSrv.URL(), logs["nats"].add) })
	wg.Go(func() { testsvc.ConsumeKafka(ctx, kc.ListenAddrs(), logs["kafka"].add) })

	d := sharedDeployment(t, map[string]string{
		// Each process posts to a path of its own (below) of one receiver;
		// this one is `seckill verify`'s, which only reads the outbox.
		"SECKILL_EVENTS_WEBHOOK_URL":    hook.url("verify"),
		"SECKILL_EVENTS_WEBHOOK_SECRET": secret,
		"SECKILL_EVENTS_NATS_URL":       natsSrv.URL(),
		"SECKILL_EVENTS_AMQP_URL":       amqpURL,
		"SECKILL_EVENTS_KAFKA_BROKERS":  kc.ListenAddrs()[0],
		"SECKILL_EVENTS_TIMEOUT":        "2s",
		"SECKILL_EVENTS_BACKOFF_MIN":    "100ms",
		"SECKILL_EVENTS_BACKOFF_MAX":    "1s",
		"SECKILL_ORDER_PAYMENT_TIMEOUT": "8s",
	})
	procs := map[string]*proc{}
	for _, name := range []string{"serve-1", "serve-2"} {
		env := maps.Clone(d.env)
		env["SECKILL_EVENTS_WEBHOOK_URL"] = hook.url(name)
		p := newProc(t, name, env, true, "serve")
		p.start()
		d.api = append(d.api, p)
		procs[name] = p
	}
	sku := d.seed(stock)

	// Shopper i pays (i%3 == 0), cancels (1) or leaves (2) its order.
	var actMu sync.Mutex
	acts := map[string]int{}
	refusedActs := map[string]refusedAct{} // order id -> its pay or cancel, refused
	c := d.arrive(sku, "tx", buyers, rate, func(c *crowd, i int, user string) {
		c.shop(i, user)
		c.mu.Lock()
		id := c.shoppers[i].Order
		c.mu.Unlock()
		action := []string{"pay", "cancel", ""}[i%3]
		if id == "" || action == "" {
			return
		}
		a := d.settleOrder(i, user, id, action)
		actMu.Lock()
		defer actMu.Unlock()
		if a.Err != nil {
			acts[action+" no answer"]++
		} else {
			acts[fmt.Sprintf("%s %d %s", action, a.Status, a.Str("error"))]++
		}
		if a.Err != nil || a.Status != http.StatusOK {
			refusedActs[id] = refusedAct{action: action, answered: a.Start.Add(a.Took), a: a}
		}
	})

	// serve-1 dies inside one of its webhook deliveries, events flowing on
	// every transport: the shop has that event, its sender never records
	// it. It is started again at once.
	testutil.Eventually(t, time.Minute, "a third of the stock's events on every transport", func() bool {
		for _, l := range logs {
			if l.ids() < stock/3 {
				return false
			}
		}
		return true
	})
	victim := procs["serve-1"]
	kill := hook.arm(victim.Name, func(string) { victim.Kill() })
	testutil.ClosedWithin(t, time.Minute, kill.done, "a webhook delivery of serve-1 to kill it in")
	killed := time.Now()
	victim.start()
	restarted := time.Now()

	ss := c.Wait()
	rep := d.drained(sku, time.Minute)
	assert.Zero(t, rep.DeadLetters)

	// Every order closed in MySQL, and every transport has every event of
	// each. The poll reads MySQL at most every 250ms.
	var want map[string][]string
	why, last := "", time.Time{}
	defer func() {
		if t.Failed() {
			t.Log("last seen: " + why)
		}
	}()
	testutil.Eventually(t, 90*time.Second, "every order's events on every transport", func() bool {
		if time.Since(last) < 250*time.Millisecond {
			return false
		}
		last = time.Now()
		var open int
		want, open = expectedEvents(d.sqlState(sku))
		if open > 0 {
			why = fmt.Sprintf("%d orders pending payment", open)
			return false
		}
		for _, name := range transportNames {
			if n := logs[name].lacking(want); n > 0 {
				why = fmt.Sprintf("%s lacks events of %d orders", name, n)
				return false
			}
		}
		return true
	})
	settled := time.Now()
	testutil.Eventually(t, 30*time.Second, "every delivery recorded, none dead", func() bool {
		if time.Since(last) < 250*time.Millisecond {
			return false
		}
		last = time.Now()
		why = d.backlogProblem(len(transportNames))
		return why == ""
	})

	checkErrorBodies(t, ss)
	f := figures{scenario: "transports-kill9", recoverMS: settled.Sub(restarted).Milliseconds()}
	d.checkOrders(sku, accepted(ss), false, &f)
	s := d.sqlState(sku)
	d.verify(sku)
	events := 0
	for _, types := range want {
		events += len(types)
	}
	byStatus := map[string]int{}
	for _, st := range s.status {
		byStatus[st]++
	}

	var line []string
	for _, name := range transportNames {
		l := logs[name].snapshot()
		assert.Empty(t, l.problems, "%s: every message is an event, and an id always carries the same body", name)
		var wrong, madeUp []string
		for id, types := range want {
			if got := l.byOrder[id]; !slices.Equal(got, types) {
				wrong = append(wrong, fmt.Sprintf("%s (%s): %v, want %v", id, s.status[id], got, types))
			}
		}
		for id, ev := range l.events {
			if _, ok := want[ev.orderID]; !ok || ev.sku != sku {
				madeUp = append(madeUp, fmt.Sprintf("%s (%s of %s on sku %d)", id, ev.typ, ev.orderID, ev.sku))
			}
		}
		assert.Empty(t, first20(wrong), "%s: %d orders whose events, by id, are not those MySQL's status says in the order written (the first 20)", name, len(wrong))
		assert.Empty(t, first20(madeUp), "%s: %d events of no order of the sale in MySQL (the first 20)", name, len(madeUp))
		var again []string
		duplicates := 0
		for id, n := range l.count {
			if n > 1 {
				again = append(again, fmt.Sprintf("%s×%d", id, n))
				duplicates += n - 1
			}
		}
		if len(again) > 0 {
			t.Logf("%s: %d ids delivered more than once, dropped by id: %v", name, len(again), first20(again))
		}
		line = append(line, fmt.Sprintf("%s_events=%d", name, len(l.events)), fmt.Sprintf("%s_deliveries=%d", name, l.deliveries),
			fmt.Sprintf("%s_duplicates=%d", name, duplicates))
	}
	webhookCount := logs["webhook"].snapshot().count
	assert.GreaterOrEqual(t, webhookCount[kill.id], 2, "%s, taken when %s died, is delivered again", kill.id, victim.Name)

	f.more = append([]string{
		fmt.Sprintf("stock=%d", stock), fmt.Sprintf("buyers=%d", buyers), fmt.Sprintf("orders=%d", len(s.status)),
		fmt.Sprintf("paid=%d", byStatus[order.StatusPaid]), fmt.Sprintf("cancelled=%d", byStatus[order.StatusCancelled]),
		fmt.Sprintf("expired=%d", byStatus[order.StatusExpired]), fmt.Sprintf("failed=%d", byStatus[order.StatusFailed]),
		fmt.Sprintf("events=%d", events),
	}, line...)
	f.more = append(f.more, fmt.Sprintf("kill_event=%s", kill.id), fmt.Sprintf("kill_event_webhook_deliveries=%d", webhookCount[kill.id]),
		fmt.Sprintf("kill_to_restart_ms=%d", restarted.Sub(killed).Milliseconds()))
	f.log(t)
	t.Logf("answers: %v; pays and cancels: %v", tally(ss), acts)
	// A pay or a cancel is refused only past the order's deadline.
	for id, r := range refusedActs {
		var expires time.Time
		require.NoError(t, d.db.QueryRow("SELECT expires_at FROM orders WHERE order_id = ?", id).Scan(&expires))
		msg := fmt.Sprintf("%s of %s (%s in MySQL, deadline %s) answered at %s: %d %v %s", r.action, id, s.status[id],
			expires.UTC().Format(time.StampMilli), r.answered.UTC().Format(time.StampMilli), r.a.Status, r.a.Err, r.a.Raw)
		if r.a.Err == nil && r.answered.Before(expires) {
			t.Errorf("refused before the deadline: %s", msg)
		} else {
			t.Log(msg)
		}
	}
}

// refusedAct is a pay or a cancel that was not answered 200.
type refusedAct struct {
	action   string
	answered time.Time // when the answer came
	a        answer
}

// settleOrder pays or cancels (action "pay" or "cancel") user's order id
// from shopper i's instance, trying the next one when it does not answer
// and again while the order is still queued (409 order_queued) or the
// answer is 503, as a client does after Retry-After. It returns the last
// answer.
func (d *deployment) settleOrder(i int, user, id, action string) answer {
	deadline := time.Now().Add(time.Minute)
	for try := 0; ; try++ {
		a := d.call(d.api[(i+try)%len(d.api)].URL(), "POST", "/api/v1/orders/"+id+"/"+action, user, nil)
		again := a.Err != nil || a.Status == http.StatusServiceUnavailable ||
			(a.Status == http.StatusConflict && a.Str("error") == "order_queued")
		if !again || time.Now().After(deadline) {
			return a
		}
		if a.Err == nil {
			time.Sleep(250 * time.Millisecond) // sooner than Retry-After asks: the window is short
		}
	}
}

// expectedEvents is the events of each order in s, in the order they are
// written, by order id, and the number of orders still pending payment
// (their last event is yet to come).
func expectedEvents(s sqlState) (want map[string][]string, open int) {
	want = map[string][]string{}
	for id, st := range s.status {
		switch st {
		case order.StatusFailed:
			want[id] = []string{outbox.OrderFailed}
		case order.StatusPaid:
			want[id] = []string{outbox.OrderCreated, outbox.OrderPaid}
		case order.StatusCancelled:
			want[id] = []string{outbox.OrderCreated, outbox.OrderCancelled}
		case order.StatusExpired:
			want[id] = []string{outbox.OrderCreated, outbox.OrderExpired}
		default:
			want[id] = []string{outbox.OrderCreated}
			open++
		}
	}
	return want, open
}

// backlogProblem says what keeps the receivers' backlogs (GET
// /admin/events/receivers) from being n receivers with every event
// delivered and no dead letter; "" when nothing does.
func (d *deployment) backlogProblem(n int) string {
	a := d.call(d.live().URL(), "GET", "/admin/events/receivers", "", nil)
	if a.Err != nil || a.Status != http.StatusOK {
		return fmt.Sprintf("receivers: %v %d %s", a.Err, a.Status, a.Raw)
	}
	var backlog struct{ Items []outbox.Backlog }
	if err := json.Unmarshal([]byte(a.Raw), &backlog); err != nil {
		return err.Error()
	}
	ok := 0
	for _, b := range backlog.Items {
		if b.Pending == 0 && b.Dead == 0 && b.Delivered > 0 {
			ok++
		}
	}
	if len(backlog.Items) != n || ok != n {
		return fmt.Sprintf("receivers: %+v", backlog.Items)
	}
	return ""
}

// busEvent is what a transport log keeps of an event's first delivery.
type busEvent struct {
	typ, orderID string
	sku          uint64
	digest       [32]byte
}

// transportLog is what a consumer of one transport read: every delivery
// counted by event id, each id's first delivery, and each order's event
// types in the order their ids first came (a redelivery dropped by id, as
// a consumer does).
type transportLog struct {
	mu         sync.Mutex
	deliveries int
	count      map[string]int
	events     map[string]busEvent
	byOrder    map[string][]string
	problems   []string // the first few messages that are not an event or change an id's body
}

func newTransportLog() *transportLog {
	return &transportLog{count: map[string]int{}, events: map[string]busEvent{}, byOrder: map[string][]string{}}
}

// add notes the event in body, seckill's envelope.
func (l *transportLog) add(body []byte) {
	var m struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			Order struct {
				OrderID string `json:"order_id"`
				SKU     uint64 `json:"sku_id"`
			} `json:"order"`
		} `json:"data"`
	}
	err := json.Unmarshal(body, &m)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deliveries++
	if err != nil || m.ID == "" || (strings.HasPrefix(m.Type, "order.") && m.ID != eventID(m.Type, m.Data.Order.OrderID)) {
		l.problem("not an event (%v): %.300s", err, body)
		return
	}
	ev := busEvent{typ: m.Type, orderID: m.Data.Order.OrderID, sku: m.Data.Order.SKU, digest: sha256.Sum256(body)}
	l.count[m.ID]++
	if first, ok := l.events[m.ID]; ok {
		if first.digest != ev.digest {
			l.problem("%s: another body than its first delivery's: %.300s", m.ID, body)
		}
		return
	}
	l.events[m.ID] = ev
	l.byOrder[ev.orderID] = append(l.byOrder[ev.orderID], ev.typ)
}

func (l *transportLog) problem(format string, args ...any) {
	if len(l.problems) < 20 {
		l.problems = append(l.problems, fmt.Sprintf(format, args...))
	}
}

// ids counts the event ids delivered.
func (l *transportLog) ids() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// lacking counts the orders of want with fewer events than want says.
func (l *transportLog) lacking(want map[string][]string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for id, types := range want {
		if len(l.byOrder[id]) < len(types) {
			n++
		}
	}
	return n
}

// snapshot copies the log.
func (l *transportLog) snapshot() *transportLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &transportLog{deliveries: l.deliveries, count: maps.Clone(l.count), events: maps.Clone(l.events),
		byOrder: map[string][]string{}, problems: slices.Clone(l.problems)}
	for id, types := range l.byOrder {
		c.byOrder[id] = slices.Clone(types)
	}
	return c
}

// hookReceiver is the webhook transport's consumer: it verifies each
// delivery's signature, notes the event in its log and acknowledges it.
// Each process posts to /events/<its name>; a fault armed for a process
// runs inside the next of its deliveries, before the answer.
type hookReceiver struct {
	srv    *httptest.Server
	verify *webhook.Verifier
	log    *transportLog

	mu    sync.Mutex
	fault *eventFault
}

func newHookReceiver(t *testing.T, secret string, log *transportLog) *hookReceiver {
	t.Helper()
	v, err := webhook.NewVerifier([]string{secret})
	require.NoError(t, err)
	h := &hookReceiver{verify: v, log: log}
	h.srv = httptest.NewServer(h)
	t.Cleanup(h.srv.Close)
	return h
}

// url is process's events.webhook_url entry: one receiver, named as in
// TestEventsExactlyOnceByID, at a path of the process's own.
func (h *hookReceiver) url(process string) string {
	return eventsReceiverName + "=" + h.srv.URL + "/events/" + process
}

// arm runs fn inside the next delivery from sender, before it is answered.
func (h *hookReceiver) arm(sender string, fn func(sender string)) *eventFault {
	f := &eventFault{sender: sender, fn: fn, done: make(chan struct{})}
	h.mu.Lock()
	h.fault = f
	h.mu.Unlock()
	return f
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	sender := strings.TrimPrefix(req.URL.Path, "/events/")
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err == nil {
		err = h.verify.Verify(body, req.Header)
	}
	if err != nil {
		h.log.mu.Lock()
		h.log.problem("%s from %s: %v", req.Header.Get(webhook.HeaderID), sender, err)
		h.log.mu.Unlock()
		http.Error(w, "bad delivery", http.StatusBadRequest)
		return
	}
	h.log.add(body)
	h.mu.Lock()
	f := h.fault
	if f != nil && f.sender == sender {
		h.fault = nil
		f.id, f.from = req.Header.Get(webhook.HeaderID), sender
	} else {
		f = nil
	}
	h.mu.Unlock()
	if f != nil {
		f.fn(sender)
		close(f.done)
	}
	w.WriteHeader(http.StatusNoContent)
}
