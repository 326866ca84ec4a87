package outbox

import (
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// newAMQP returns the sink of exchange at url, closed at the end of the
// test.
func newAMQP(t testing.TB, url, exchange string) *AMQP {
	t.Helper()
	a := NewAMQP(url, exchange, Format{}, quiet)
	t.Cleanup(a.Close)
	return a
}

// consumer reads, as a shop would, the messages of a durable queue of its
// own bound to exchange for every routing key.
type consumer struct {
	mu   sync.Mutex
	msgs []amqp.Delivery
}

// consume declares exchange as seckill does, binds a new queue to it, and
// gathers its messages until the test ends.
func consume(t testing.TB, url, exchange string) *consumer {
	t.Helper()
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	require.NoError(t, err)
	require.NoError(t, ch.ExchangeDeclare(exchange, amqp.ExchangeTopic, true, false, false, false, nil))
	q, err := ch.QueueDeclare("shop", true, false, false, false, nil)
	require.NoError(t, err)
	require.NoError(t, ch.QueueBind(q.Name, "#", exchange, false, nil))
	deliveries, err := ch.Consume(q.Name, "", true, false, false, false, nil)
	require.NoError(t, err)
	c := &consumer{}
	go func() {
		for d := range deliveries {
			c.mu.Lock()
			c.msgs = append(c.msgs, d)
			c.mu.Unlock()
		}
	}()
	return c
}

// received returns the messages received so far.
func (c *consumer) received() []amqp.Delivery {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]amqp.Delivery(nil), c.msgs...)
}

// Each event is published to the exchange with its type as routing key, as
// a persistent JSON message whose message-id is the event id; a retry of
// the same event is a message with the same id, which the consumer drops.
func TestAMQPPublishesEachEventConfirmed(t *testing.T) {
	t.Parallel()
	url := testsvc.RabbitMQ(t)
	c := consume(t, url, "seckill.orders")
	a := newAMQP(t, url, "seckill.orders")
	created, paid := event(t, OrderCreated, "A", t0), event(t, OrderPaid, "A", t0)

	require.NoError(t, a.Send(t.Context(), &created))
	require.NoError(t, a.Send(t.Context(), &created), "again, as a retry")
	require.NoError(t, a.Send(t.Context(), &paid))

	testutil.Eventually(t, 30*time.Second, "three messages", func() bool { return len(c.received()) == 3 })
	msgs := c.received()
	for i, want := range []Event{created, created, paid} {
		m := msgs[i]
		assert.Equal(t, want.EventID, m.MessageId)
		assert.Equal(t, want.Type, m.RoutingKey)
		assert.Equal(t, want.Type, m.Type)
		assert.Equal(t, "seckill.orders", m.Exchange)
		assert.Equal(t, amqp.Persistent, m.DeliveryMode)
		assert.Equal(t, "application/json", m.ContentType)
		assert.Equal(t, "A", m.Headers["order_id"])
		assert.Equal(t, want.Payload, string(m.Body), "the event as stored")
	}
}

// The broker away holds back the AMQP receiver only: while it cannot be
// reached the webhook-like receiver beside it gets every event, and once
// it is back the AMQP receiver gets its whole backlog, every event of each
// order in order, each once.
func TestAMQPReceiverAwayHoldsOnlyItself(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	vhost := testsvc.RabbitMQ(t)
	u, err := url.Parse(vhost)
	require.NoError(t, err)
	proxy := testutil.NewProxy(t, u.Host)
	proxy.Down()
	u.Host = proxy.Addr()
	a := newAMQP(t, u.String(), "seckill.orders")
	shop := newSink()
	shop.name = "shop"

	now := time.Now()
	registered(t, db, a.Name(), shop.Name())
	var events []Event
	for o := range 30 {
		for _, typ := range []string{OrderCreated, OrderPaid, OrderCancelled} {
			events = append(events, event(t, typ, fmt.Sprintf("o%02d", o), now))
		}
	}
	stored := store(t, db, events...)
	shop.expect(stored...)
	run(t, NewDispatcher(db, Options{Sinks: []Sink{a, shop}, Timeout: 2 * time.Second, Poll: 2 * time.Millisecond,
		Backoff: fast, Log: quiet}))

	testutil.Eventually(t, 30*time.Second, "the other receiver has every event", func() bool { return shop.ackedAll(stored) })
	testutil.Eventually(t, 30*time.Second, "a failed attempt to reach the broker", func() bool {
		var tried int64
		require.NoError(t, db.Model(&Delivery{}).Where("receiver = ? AND attempts > 0", a.Name()).Count(&tried).Error)
		return tried > 0
	})
	assert.Equal(t, int64(len(stored)), countsOf(t, db, a.Name(), time.Now()).Pending, "the AMQP backlog")

	c := consume(t, vhost, "seckill.orders")
	proxy.Up()
	testutil.Eventually(t, 60*time.Second, "the backlog published", func() bool { return len(c.received()) >= len(stored) })
	byOrder := map[string][]string{}
	seen := map[string]int{}
	for _, m := range c.received() {
		seen[m.MessageId]++
		order, _ := m.Headers["order_id"].(string)
		byOrder[order] = append(byOrder[order], m.MessageId)
	}
	for _, e := range stored {
		assert.Equal(t, 1, seen[e.EventID], "%s once", e.EventID)
	}
	for o := range 30 {
		order := fmt.Sprintf("o%02d", o)
		assert.Equal(t, []string{"evt_created_" + order, "evt_paid_" + order, "evt_cancelled_" + order}, byOrder[order])
	}
	_, problems := shop.report()
	assert.Empty(t, problems)
}
