package outbox

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/testsvc"
)

// benchReceivers are the receivers BenchmarkDispatch measures, each made
// for one run: a webhook that answers at once, one that answers in 50 ms,
// one that answers in 1 s to one request in a hundred, NATS, RabbitMQ and
// kfake (no Kafka broker runs here).
var benchReceivers = []struct {
	name string
	sink func(b *testing.B) Sink
}{
	{"webhook", func(b *testing.B) Sink { return benchHook(b, func(int64) time.Duration { return 0 }) }},
	{"webhook-50ms", func(b *testing.B) Sink {
		return benchHook(b, func(int64) time.Duration { return 50 * time.Millisecond })
	}},
	{"webhook-1s-in-100", func(b *testing.B) Sink {
		return benchHook(b, func(n int64) time.Duration {
			if n%100 == 0 {
				return time.Second
			}
			return 0
		})
	}},
	{"nats", func(b *testing.B) Sink { return newNATS(b, testsvc.StartNATS(b).URL(), "bench") }},
	{"rabbitmq", func(b *testing.B) Sink {
		url := testsvc.RabbitMQ(b)
		consume(b, url, "seckill.orders") // a bound queue, read as it fills
		return newAMQP(b, url, "seckill.orders")
	}},
	{"kfake", func(b *testing.B) Sink {
		return newKafka(b, newKfake(b, "seckill.orders"), "seckill.orders")
	}},
}

// benchHook is a webhook to a server that waits delay(n) before answering
// its n-th request 204.
func benchHook(b *testing.B, delay func(n int64) time.Duration) Sink {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if d := delay(n.Add(1)); d > 0 {
			time.Sleep(d)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(srv.Close)
	hook, err := NewWebhook("shop", srv.URL, []string{secret()}, Format{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return hook
}

// BenchmarkDispatch measures one dispatcher (events.concurrency 32) on its
// own, for comparing two versions of it: a writer appends 20 batches of 500
// order.created events, one transaction each, as fast as MariaDB takes
// them, while the dispatcher delivers them to the receiver. It reports the
// events delivered per second from the first write to the last delivery,
// and the CPU time of this process per event. Whether events keep up with
// a sale is measured over HTTP, against the drain of the sale's orders:
// loadbench -events (make bench-events).
func BenchmarkDispatch(b *testing.B) {
	for _, r := range benchReceivers {
		b.Run(r.name, func(b *testing.B) {
			const batches, perBatch = 20, 500
			var delivered, cpu float64
			for b.Loop() {
				db := openDB(b)
				sink := r.sink(b)
				registered(b, db, sink.Name())
				stop := run(b, NewDispatcher(db, Options{Sinks: []Sink{sink}, Log: quiet}))
				start, cpu0 := time.Now(), cpuTime()
				for i := range batches {
					events := make([]Event, perBatch)
					for j := range events {
						events[j] = event(b, OrderCreated, fmt.Sprintf("b%02d-%04d", i, j), start)
					}
					if err := db.Transaction(func(tx *gorm.DB) error { return NewWriter(true).Append(tx, events...) }); err != nil {
						b.Fatal(err)
					}
				}
				waitDelivered(b, db, sink.Name(), batches*perBatch)
				took := time.Since(start)
				cpu = float64((cpuTime() - cpu0).Microseconds()) / (batches * perBatch)
				stop()
				delivered = batches * perBatch / took.Seconds()
			}
			b.ReportMetric(delivered, "delivered/s")
			b.ReportMetric(cpu, "cpu-us/event")
		})
	}
}

// BenchmarkMassExpiry measures a mass expiry: 10,000 order.expired events,
// each written by a transaction of its own (as expiries are), from 8
// writers, delivered to a webhook that answers at once. It reports the
// seconds from the first write to the last delivery.
func BenchmarkMassExpiry(b *testing.B) {
	const orders, writers = 10_000, 8
	var took time.Duration
	for b.Loop() {
		db := openDB(b)
		sink := benchHook(b, func(int64) time.Duration { return 0 })
		registered(b, db, sink.Name())
		stop := run(b, NewDispatcher(db, Options{Sinks: []Sink{sink}, Log: quiet}))
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for w := range writers {
			wg.Go(func() {
				for i := w; i < orders && errs[w] == nil; i += writers {
					e := event(b, OrderExpired, fmt.Sprintf("x%05d", i), start)
					errs[w] = db.Transaction(func(tx *gorm.DB) error { return NewWriter(true).Append(tx, e) })
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		waitDelivered(b, db, sink.Name(), orders)
		took = time.Since(start)
		stop()
	}
	b.ReportMetric(took.Seconds(), "s-to-deliver-all")
}

// cpuTime is the CPU time this process has used: the dispatcher, the
// writer, and the receivers that run in it (the webhooks' servers, kfake),
// not MariaDB, NATS or RabbitMQ.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitDelivered waits until receiver has n deliveries delivered, reading
// the count every 50 ms, for at most 10 minutes.
func waitDelivered(b *testing.B, db *gorm.DB, receiver string, n int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for {
		var got int64
		if err := db.WithContext(ctx).Model(&Delivery{}).Where("receiver = ? AND status = ?", receiver, StatusDelivered).
			Count(&got).Error; err != nil {
			b.Fatal(err)
		}
		if got >= int64(n) {
			return
		}
		select {
		case <-ctx.Done():
			b.Fatalf("%d of %d events delivered to %s after 10 minutes", got, n, receiver)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
