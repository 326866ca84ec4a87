package testsvc

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// What a shop's consumer of seckill's order events reads, on each bus, with
// seckill's default names. Each passes every message body to add; a
// consumer that cannot start passes its error as a body instead, which no
// event decodes from.

// ConsumeAMQP binds a queue of its own to seckill's exchange, declared as
// seckill does, and passes on its messages until the test ends.
func ConsumeAMQP(t *testing.T, url string, add func(body []byte)) {
	t.Helper()
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
			add(m.Body)
		}
	}()
}

// ConsumeNATS reads the stream seckill makes from its start until ctx ends.
func ConsumeNATS(ctx context.Context, url string, add func(body []byte)) {
	nc, err := nats.Connect(url)
	if err != nil {
		add([]byte("nats: " + err.Error()))
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		add([]byte("nats: " + err.Error()))
		return
	}
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
			add(m.Data())
		}
	}
}

// ConsumeKafka reads seckill.orders from its start until ctx ends.
func ConsumeKafka(ctx context.Context, brokers []string, add func(body []byte)) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("seckill.orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		add([]byte("kafka: " + err.Error()))
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { add(r.Value) })
	}
}
