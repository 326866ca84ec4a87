package order

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/outbox"
	"github.com/seckill/seckill/internal/testsvc"
)

// BenchmarkDrainInsert measures the drain's transaction (Store.Insert) on
// the test services' MariaDB: batches of 500 orders (worker.batch_size's
// default), with order events off, on (the batch's 500 order.created
// events as one outbox_batches row in the same transaction), and on with a
// dispatcher running beside it that moves them into outbox rows and
// delivers them to a receiver that acknowledges at once. It reports
// orders/s; run it with -count to compare the medians (make bench-events).
func BenchmarkDrainInsert(b *testing.B) {
	for _, mode := range []string{"events=off", "events=on", "events=on+dispatcher"} {
		b.Run(mode, func(b *testing.B) {
			db := testsvc.MigratedMySQL(b)
			name, price, stock, limit := "bench", int64(100), int64(1_000_000_000), 1
			start := time.Now().UTC().Add(-time.Hour)
			sku, _, err := catalog.NewStore(db, nil).Upsert(b.Context(), catalog.Spec{Name: &name, PriceCents: &price,
				Stock: &stock, PerUserLimit: &limit, StartsAt: &start, EndsAt: new(start.Add(48 * time.Hour))})
			if err != nil {
				b.Fatal(err)
			}
			s := NewStore(db, outbox.NewWriter(mode != "events=off"))
			if mode == "events=on+dispatcher" {
				ctx, cancel := context.WithCancel(b.Context())
				d := outbox.NewDispatcher(db, outbox.Options{Sinks: []outbox.Sink{ackSink{}}})
				done := make(chan struct{})
				go func() { _ = d.Run(ctx); close(done) }()
				b.Cleanup(func() { cancel(); <-done })
			}
			const batch = 500
			n := 0
			b.ResetTimer()
			for b.Loop() {
				now := time.Now().UTC()
				rows := make([]Order, batch)
				for i := range rows {
					n++
					rows[i] = Order{OrderID: fmt.Sprintf("%d-0-bench%020d", sku.ID, n), SKU: sku.ID, User: fmt.Sprintf("u%d", n),
						Qty: 1, PriceCents: price, Status: StatusPendingPayment, CreatedAt: now, PersistedAt: now,
						ExpiresAt: now.Add(15 * time.Minute), UpdatedAt: now}
				}
				if _, _, err := s.Insert(b.Context(), rows, now); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "orders/s")
		})
	}
}

// ackSink acknowledges every event at once.
type ackSink struct{}

func (ackSink) Name() string                              { return "ack" }
func (ackSink) Send(context.Context, *outbox.Event) error { return nil }
