package app

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/seckill/seckill/internal/outbox"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// busEvents gathers what a consumer of one transport read: each event id
// once (a redelivery dropped by id, as a consumer does), each order's
// event types in the order they came.
type busEvents struct {
	mu      sync.Mutex
	seen    map[string]bool
	byOrder map[string][]string
	bad     []string // bodies that are not an event
}

func newBusEvents() *busEvents {
	return &busEvents{seen: map[string]bool{}, byOrder: map[string][]string{}}
}

// add notes the event in body (seckill's envelope).
func (b *busEvents) add(body []byte) {
	var m struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			Order struct {
				OrderID string `json:"order_id"`
			} `json:"order"`
		} `json:"data"`
	}
	err := json.Unmarshal(body, &m)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.bad = append(b.bad, string(body))
		return
	}
	if !b.seen[m.ID] {
		b.seen[m.ID] = true
		b.byOrder[m.Data.Order.OrderID] = append(b.byOrder[m.Data.Order.OrderID], m.Type)
	}
}

// has reports whether every order of want has its events.
func (b *busEvents) has(want map[string][]string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, types := range want {
		if len(b.byOrder[id]) < len(types) {
			return false
		}
	}
	return true
}

func (b *busEvents) of(want map[string][]string) map[string][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	got := map[string][]string{}
	for id := range want {
		got[id] = slices.Clone(b.byOrder[id])
	}
	return got
}

// badBodies returns the bodies that were not an event.
func (b *busEvents) badBodies() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.bad)
}

// Through payments (one order paid twice: a refund), a cancel and an
// expiry, the same events reach a webhook, NATS JetStream, RabbitMQ and
// Kafka (kfake: no Kafka broker runs here), each transport on its own, each
// order's in order, each event id once.
func TestEveryTransportGetsEveryEvent(t *testing.T) {
	rcv := startReceiver(t)
	natsSrv := testsvc.StartNATS(t)
	amqpURL := testsvc.RabbitMQ(t)
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "seckill.orders"))
	require.NoError(t, err)
	t.Cleanup(kc.Close)

	buses := map[string]*busEvents{"nats": newBusEvents(), "amqp": newBusEvents(), "kafka": newBusEvents()}
	testsvc.ConsumeAMQP(t, amqpURL, buses["amqp"].add)

	s := startPayments(t, saleOpts{env: map[string]string{
		"SECKILL_EVENTS_WEBHOOK_URL":    rcv.srv.URL,
		"SECKILL_EVENTS_WEBHOOK_SECRET": eventSecret,
		"SECKILL_EVENTS_NATS_URL":       natsSrv.URL(),
		"SECKILL_EVENTS_AMQP_URL":       amqpURL,
		"SECKILL_EVENTS_KAFKA_BROKERS":  kc.ListenAddrs()[0],
		"SECKILL_EVENTS_BACKOFF_MIN":    "50ms",
		"SECKILL_ORDER_PAYMENT_TIMEOUT": "6s",
	}})
	sku := s.seed(10, 2)
	paid, _ := s.pendingOrder(sku, "alice")
	cancelled, _ := s.pendingOrder(sku, "bob")
	expired, _ := s.pendingOrder(sku, "carol")
	r := s.notify(0, payment{webhookID: "msg_t1", paymentID: "pay_t1", orderID: paid, amount: 99900, currency: "EUR"})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	r = s.notify(0, payment{webhookID: "msg_t2", paymentID: "pay_t2", orderID: paid, amount: 99900, currency: "EUR"})
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	c := s.do(0, "POST", "/api/v1/orders/"+cancelled+"/cancel", "bob", nil)
	require.Equal(t, http.StatusOK, c.Status, c.Raw)
	s.waitStatus("carol", expired, "expired")

	want := map[string][]string{
		paid:      {outbox.OrderCreated, outbox.OrderPaid, outbox.PaymentRefundDue},
		cancelled: {outbox.OrderCreated, outbox.OrderCancelled},
		expired:   {outbox.OrderCreated, outbox.OrderExpired},
	}
	rcv.wait(want)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() { testsvc.ConsumeNATS(ctx, natsSrv.URL(), buses["nats"].add) })
	wg.Go(func() { testsvc.ConsumeKafka(ctx, kc.ListenAddrs(), buses["kafka"].add) })
	for name, b := range buses {
		testutil.Eventually(t, 60*time.Second, "every event on "+name, func() bool { return b.has(want) })
		assert.Equal(t, want, b.of(want), "%s: each order's events, in order, once each", name)
		assert.Empty(t, b.badBodies(), name)
	}
	testutil.Eventually(t, 30*time.Second, "every delivery recorded", func() bool {
		r := s.do(0, "GET", "/admin/events/receivers", "", nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		var backlog struct{ Items []outbox.Backlog }
		require.NoError(t, json.Unmarshal([]byte(r.Raw), &backlog))
		done := 0
		for _, b := range backlog.Items {
			if b.Pending == 0 && b.Delivered == 7 && b.Dead == 0 {
				done++
			}
		}
		return len(backlog.Items) == 4 && done == 4
	})
}
