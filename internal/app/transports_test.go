package app

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

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
	consumeAMQP(t, amqpURL, buses["amqp"])

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
	wg.Go(func() { consumeNATS(ctx, natsSrv.URL(), buses["nats"]) })
	wg.Go(func() { consumeKafka(ctx, kc.ListenAddrs(), buses["kafka"]) })
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

// consumeAMQP binds a queue of its own to seckill's exchange, declared as
// seckill does, and notes its messages until the test ends.
func consumeAMQP(t *testing.T, url string, b *busEvents) {
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	require.NoError(t, err)
	require.NoError(t, ch.ExchangeDeclare("seckill.orders", amqp.ExchangeTopic, true, false, false, false, nil))
	q, err := ch.QueueDeclare("shop", true, false, false, false, nil)
	require.NoError(t, err)
	require.NoError(t, ch.QueueBind(q.Name, "#", "seckill.orders", false, nil))
	msgs, err := ch.Consume(q.Name, "", true, false, false, false, nil)
	require.NoError(t, err)
	go func() {
		for m := range msgs {
			b.add(m.Body)
		}
	}()
}

// consumeNATS reads the stream seckill made from the start until ctx ends.
func consumeNATS(ctx context.Context, url string, b *busEvents) {
	nc, err := nats.Connect(url)
	if err != nil {
		b.add([]byte("nats: " + err.Error()))
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for ctx.Err() == nil {
		cons, err := js.OrderedConsumer(ctx, "SECKILL_EVENTS", jetstream.OrderedConsumerConfig{})
		if err != nil {
			time.Sleep(50 * time.Millisecond) // the stream is made with the first event
			continue
		}
		for ctx.Err() == nil {
			m, err := cons.Next(jetstream.FetchMaxWait(time.Second))
			if err != nil {
				continue // none yet
			}
			b.add(m.Data())
		}
	}
}

// consumeKafka reads seckill.orders from the start until ctx ends.
func consumeKafka(ctx context.Context, brokers []string, b *busEvents) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("seckill.orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.add([]byte("kafka: " + err.Error()))
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { b.add(r.Value) })
	}
}
