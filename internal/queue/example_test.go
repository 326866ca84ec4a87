package queue_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/testsvc"
)

// exampleClient connects to the test Redis (SECKILL_TEST_REDIS_ADDR, default
// 127.0.0.1:6379) and returns a key prefix of its own plus a cleanup.
func exampleClient() (*redis.Client, string, func()) {
	addr := os.Getenv(testsvc.EnvRedis)
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	prefix := "example:" + testsvc.RandomID(4) + ":"
	return c, prefix, func() {
		ctx := context.Background()
		keys, _ := c.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
		_ = c.Close()
	}
}

func Example() {
	c, prefix, done := exampleClient()
	defer done()
	ctx := context.Background()

	q, _ := queue.New(c, "orders", queue.Options{Prefix: prefix})
	added, _ := q.Enqueue(ctx, queue.Task{ID: "order-1", Type: "create", Payload: []byte(`{"sku":42}`)})
	fmt.Println("added:", added)
	added, _ = q.Enqueue(ctx, queue.Task{ID: "order-1", Type: "create"})
	fmt.Println("added again:", added)

	tasks, _ := q.Claim(ctx, 100, 30*time.Second)
	for _, t := range tasks {
		fmt.Printf("%s %s %s attempt %d\n", t.ID, t.Type, t.Payload, t.Attempt)
		_ = q.Ack(ctx, t)
	}
	fmt.Println("ack again:", q.Ack(ctx, tasks[0]))
	// Output:
	// added: true
	// added again: false
	// order-1 create {"sku":42} attempt 1
	// ack again: queue: stale claim token
}

// The buy path takes one unit of stock and enqueues the order in one script:
// no crash can leave stock taken without an order task. The stock key and the
// queue share the hash tag {sku:42}, so this also runs on Redis Cluster.
func Example_composableEnqueue() {
	c, prefix, done := exampleClient()
	defer done()
	ctx := context.Background()

	q, _ := queue.New(c, "{sku:42}", queue.Options{Prefix: prefix})
	stock := prefix + "{sku:42}:stock"
	c.Set(ctx, stock, 2, 0)

	buy := redis.NewScript(queue.EnqueueLua + `
if tonumber(redis.call('GET', KEYS[5]) or '0') <= 0 then
  return -1 -- sold out: nothing enqueued
end
if queue_enqueue(KEYS[1], KEYS[2], KEYS[3], KEYS[4],
    ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]) == 0 then
  return 0 -- the same order again: stock untouched
end
redis.call('DECR', KEYS[5])
return 1
`)
	keys := append(q.EnqueueKeys(), stock)
	for _, id := range []string{"order-1", "order-1", "order-2", "order-3"} {
		args, err := q.EnqueueArgs(queue.Task{ID: id, Type: "create", Payload: []byte(`{"user":7}`)})
		if err != nil {
			fmt.Println(err)
			return
		}
		r, _ := buy.Run(ctx, c, keys, args...).Int()
		fmt.Println(id, r)
	}
	st, _ := q.Stats(ctx)
	fmt.Println("orders queued:", st.Due)
	// Output:
	// order-1 1
	// order-1 0
	// order-2 1
	// order-3 -1
	// orders queued: 2
}

// A process runs one consumer per queue (one per SKU) and shares one Waker,
// so idle queues cost a parked goroutine and one pub/sub connection in all.
func ExampleConsumer() {
	c, prefix, done := exampleClient()
	defer done()
	ctx, cancel := context.WithCancel(context.Background())

	waker := queue.NewWaker(c)
	defer waker.Close()

	var handled atomic.Int64
	handle := queue.Each(func(_ context.Context, _ *queue.Claimed) error {
		handled.Add(1) // the order worker inserts idempotently by t.ID
		return nil
	})
	var running []chan error
	for _, sku := range []string{"{sku:1}", "{sku:2}", "{sku:3}"} {
		q, _ := queue.New(c, sku, queue.Options{Prefix: prefix})
		_, _ = q.EnqueueBatch(ctx, []queue.Task{{ID: "a", Type: "create"}, {ID: "b", Type: "create"}})
		cons := queue.NewConsumer(q, handle, queue.ConsumerOptions{BatchSize: 100, Waker: waker})
		errc := make(chan error, 1)
		go func() { errc <- cons.Run(ctx) }()
		running = append(running, errc)
	}
	for handled.Load() < 6 {
		time.Sleep(time.Millisecond)
	}
	cancel() // graceful: stop claiming, settle running batches
	for _, errc := range running {
		<-errc
	}
	fmt.Println("handled:", handled.Load())
	// Output:
	// handled: 6
}
