package outbox

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seckill/seckill/internal/testutil"
)

// No Kafka broker can run on the machines the tests run on: these tests
// use kfake, franz-go's implementation of the Kafka protocol in process,
// which speaks to the client as a broker does (idempotent produce, acks,
// partitions, fetches).

// newKfake starts a kfake cluster of three brokers with topic, in three
// partitions, closed at the end of the test.
func newKfake(t testing.TB, topic string, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(3), kfake.SeedTopics(3, topic)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// newKafka returns the sink of topic on c, closed at the end of the test.
func newKafka(t testing.TB, c *kfake.Cluster, topic string) *Kafka {
	t.Helper()
	k, err := NewKafka(KafkaOptions{Brokers: c.ListenAddrs(), Topic: topic})
	require.NoError(t, err)
	t.Cleanup(k.Close)
	return k
}

// fetched reads topic of c from the start, as a consumer would, until
// enough says it has enough records.
func fetched(t *testing.T, c *kfake.Cluster, topic string, enough func([]*kgo.Record) bool) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx := testutil.Context(t, 60*time.Second)
	var out []*kgo.Record
	for !enough(out) {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "gave up waiting for records; have %d", len(out))
		fs.EachError(func(_ string, _ int32, err error) { require.NoError(t, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// distinct counts the distinct event ids of recs.
func distinct(recs []*kgo.Record) int {
	ids := map[string]bool{}
	for _, r := range recs {
		ids[header(r, KafkaHeaderID)] = true
	}
	return len(ids)
}

// header returns the value of header key of r.
func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// Each event is a record keyed by its order id, the event as its value and
// its id and type in headers: one order's events share a partition, in the
// order they were produced; a retry is a record with the same event_id.
func TestKafkaProducesRecordsKeyedByOrder(t *testing.T) {
	t.Parallel()
	c := newKfake(t, "seckill.orders")
	k := newKafka(t, c, "seckill.orders")
	events := []Event{event(t, OrderCreated, "A", t0), event(t, OrderCreated, "B", t0), event(t, OrderPaid, "A", t0)}
	for i := range events {
		require.NoError(t, k.Send(t.Context(), &events[i]))
	}
	require.NoError(t, k.Send(t.Context(), &events[2]), "again, as a retry")

	recs := fetched(t, c, "seckill.orders", func(recs []*kgo.Record) bool { return len(recs) == 4 })
	byID := map[string][]*kgo.Record{}
	partitionOf := map[string]int32{}
	var ofA []string
	for _, r := range recs {
		id := header(r, KafkaHeaderID)
		byID[id] = append(byID[id], r)
		if p, ok := partitionOf[string(r.Key)]; ok {
			assert.Equal(t, p, r.Partition, "one order, one partition")
		}
		partitionOf[string(r.Key)] = r.Partition
		if string(r.Key) == "A" {
			ofA = append(ofA, id)
		}
	}
	assert.Equal(t, []string{events[0].EventID, events[2].EventID, events[2].EventID}, ofA, "order A's records in order")
	for _, e := range events {
		require.NotEmpty(t, byID[e.EventID], e.EventID)
		r := byID[e.EventID][0]
		assert.Equal(t, e.OrderID, string(r.Key))
		assert.Equal(t, e.Type, header(r, KafkaHeaderType))
		assert.Equal(t, "application/json", header(r, "content-type"))
		assert.Equal(t, e.Payload, string(r.Value), "the event as stored")
	}
}

// refused answers req as brokers short of in-sync replicas do: every
// partition refused with NOT_ENOUGH_REPLICAS, which the client retries.
func refused(req *kmsg.ProduceRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		t := kmsg.NewProduceResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewProduceResponseTopicPartition()
			p.Partition = rp.Partition
			p.ErrorCode = kerr.NotEnoughReplicas.Code
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// Brokers that refuse every produce hold back the Kafka receiver only: the
// other receiver gets every event meanwhile, and once they take records
// again the Kafka receiver gets its backlog, each order's events in order,
// each event id once or, where a produce was retried, again with the same
// id.
func TestKafkaReceiverAwayHoldsOnlyItself(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	c := newKfake(t, "seckill.orders")
	var away atomic.Bool
	away.Store(true)
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if !away.Load() {
			return nil, nil, false
		}
		c.KeepControl()
		return refused(req.(*kmsg.ProduceRequest)), nil, true
	})
	k := newKafka(t, c, "seckill.orders")
	shop := newSink()
	shop.name = "shop"

	now := time.Now()
	registered(t, db, k.Name(), shop.Name())
	var events []Event
	for o := range 30 {
		for _, typ := range []string{OrderCreated, OrderPaid, OrderExpired} {
			events = append(events, event(t, typ, fmt.Sprintf("o%02d", o), now))
		}
	}
	stored := store(t, db, events...)
	shop.expect(stored...)
	run(t, NewDispatcher(db, Options{Sinks: []Sink{k, shop}, Timeout: 2 * time.Second, Poll: 2 * time.Millisecond,
		Backoff: fast, Log: quiet}))

	testutil.Eventually(t, 30*time.Second, "the other receiver has every event", func() bool { return shop.ackedAll(stored) })
	testutil.Eventually(t, 30*time.Second, "a refused produce", func() bool {
		var tried int64
		require.NoError(t, db.Model(&Delivery{}).Where("receiver = ? AND attempts > 0", k.Name()).Count(&tried).Error)
		return tried > 0
	})
	assert.Equal(t, int64(len(stored)), countsOf(t, db, k.Name(), time.Now()).Pending, "the Kafka backlog")

	away.Store(false)
	testutil.Eventually(t, 60*time.Second, "the backlog delivered", func() bool {
		return countsOf(t, db, k.Name(), time.Now()).Delivered == int64(len(stored))
	})
	recs := fetched(t, c, "seckill.orders", func(recs []*kgo.Record) bool { return distinct(recs) == len(stored) })
	byOrder := map[string][]string{}
	for _, r := range recs {
		id := header(r, KafkaHeaderID)
		if ids := byOrder[string(r.Key)]; len(ids) > 0 && ids[len(ids)-1] == id {
			continue // a redelivery, dropped by id as a consumer does
		}
		byOrder[string(r.Key)] = append(byOrder[string(r.Key)], id)
	}
	for o := range 30 {
		order := fmt.Sprintf("o%02d", o)
		assert.Equal(t, []string{"evt_created_" + order, "evt_paid_" + order, "evt_expired_" + order}, byOrder[order])
	}
}
