package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kfake"
)

// eventReceiverNames are the receivers of the -events run, in order: none
// (events off, the drain's own rate), a webhook that answers at once, one
// that answers in 50 ms, one that answers in 1 s to one request in a
// hundred, NATS JetStream, RabbitMQ, and Kafka's protocol in this process
// (kfake: no Kafka broker runs here); then, tuned, the 50 ms webhook with
// events.concurrency 256.
var eventReceiverNames = []string{"off", "webhook", "webhook-50ms", "webhook-1s-in-100", "nats", "rabbitmq", "kfake", "webhook-50ms-c256"}

// eventReceiver is a receiver of the -events run: the settings that send a
// server's events to it, and how to remove what it made.
type eventReceiver struct {
	name     string
	receiver string // the name seckill gives it
	env      []string
	stop     func()
}

// eventRow is one sale of the -events run.
type eventRow struct {
	orders int64
	// drainRate is the orders over the time from the first buy to the last
	// order in SQL; deliverRate the orders (one order.created each) over
	// the time from the first buy to the last event delivered.
	drainRate, deliverRate float64
	serverUS, mysqlUS      float64 // CPU per order, from the first buy to the last delivery
}

// eventRuns runs, for each receiver of list (comma-separated, or "all"), a
// sale of one hot SKU with the shipped defaults and order events sent to
// it, -event-rounds times, and prints the events delivered per second
// against the drain's orders per second.
func (b *bench) eventRuns(out io.Writer, list string) error {
	names := eventReceiverNames
	if list != "all" {
		names = strings.Split(list, ",")
	}
	rows := map[string][]eventRow{}
	for round := range b.cfg.eventRounds {
		for _, name := range names {
			rc, err := b.eventReceiver(name)
			if err != nil {
				return err
			}
			r, err := b.eventSale(rc)
			rc.stop()
			if err != nil {
				return fmt.Errorf("events to %s: %w", name, err)
			}
			fmt.Fprintf(out, "round %d, %-18s %7d orders  drain %7.0f orders/s  delivered %7.0f events/s  keep-up %.2f  per order: server %.1f µs, mysql %.1f µs  (load %s)\n",
				round+1, name, r.orders, r.drainRate, r.deliverRate, r.deliverRate/r.drainRate, r.serverUS, r.mysqlUS, loadavg())
			rows[name] = append(rows[name], r)
		}
	}
	fmt.Fprintf(out, "\n| receiver | drain, orders/s | delivered, events/s | keep-up (median, rounds) | server µs/order | MariaDB µs/order |\n|---|---|---|---|---|---|\n")
	for _, name := range names {
		rs := rows[name]
		keep := make([]float64, len(rs))
		for i, r := range rs {
			keep[i] = r.deliverRate / r.drainRate
		}
		med := func(f func(eventRow) float64) float64 {
			v := make([]float64, len(rs))
			for i, r := range rs {
				v[i] = f(r)
			}
			return median(v)
		}
		fmt.Fprintf(out, "| %s | %.0f | %.0f | %.2f (%s) | %.1f | %.1f |\n", name,
			med(func(r eventRow) float64 { return r.drainRate }), med(func(r eventRow) float64 { return r.deliverRate }),
			median(keep), joinRatios(keep),
			med(func(r eventRow) float64 { return r.serverUS }), med(func(r eventRow) float64 { return r.mysqlUS }))
	}
	v := b.verify()
	fmt.Fprintln(out, "\nseckill verify:", v)
	if !strings.HasPrefix(v, "ok") {
		return fmt.Errorf("verify: %s", v)
	}
	return nil
}

// eventSale runs wrk against one hot SKU of a server sending its events to
// rc, then waits for the drain and for every event to be delivered.
func (b *bench) eventSale(rc eventReceiver) (eventRow, error) {
	p, a, err := b.server("events-"+rc.name, []string{"serve"}, rc.env...)
	if err != nil {
		return eventRow{}, err
	}
	defer func() {
		b.stopServer(p)
		// The next sale starts from an empty outbox: a receiver of the
		// same name would otherwise be given every event since its last.
		for _, t := range []string{"outbox_deliveries", "outbox_receivers", "outbox", "outbox_batches"} {
			_, _ = b.db.Exec("TRUNCATE TABLE " + t)
		}
	}()
	id, err := a.seed("events to "+rc.name, b.cfg.stock)
	if err != nil {
		return eventRow{}, err
	}
	b.skus = append(b.skus, id)
	time.Sleep(500 * time.Millisecond) // the drain picks the SKU up
	before, _ := a.outcomes()
	c0 := b.cpuNow(p)
	start := time.Now()
	if _, err := b.wrk(p.url, []int64{id}, b.cfg.duration); err != nil {
		return eventRow{}, err
	}
	after, _ := a.outcomes()
	n := int64(diff(after, before)["accepted"])
	if err := b.persisted([]int64{id}, n, 5*time.Minute); err != nil {
		return eventRow{}, err
	}
	drained := time.Since(start)
	took := drained
	if rc.name != "off" {
		if err := a.eventsDelivered(rc.receiver, n, 10*time.Minute); err != nil {
			return eventRow{}, err
		}
		took = time.Since(start)
	}
	c1 := b.cpuNow(p)
	if rc.name != "off" {
		if err := a.eventsSettled(rc.receiver, time.Minute); err != nil {
			return eventRow{}, err
		}
	}
	if n == 0 {
		return eventRow{}, fmt.Errorf("no order accepted")
	}
	return eventRow{
		orders:    n,
		drainRate: float64(n) / drained.Seconds(), deliverRate: float64(n) / took.Seconds(),
		serverUS: (c1.server - c0.server) / float64(n) * 1e6, mysqlUS: (c1.mysql - c0.mysql) / float64(n) * 1e6,
	}, nil
}

// eventsDelivered waits until the server counts n events delivered to
// receiver (seckill_events_delivered_total, polled every 50 ms: reading
// the outbox instead would add to MariaDB's work).
func (a *api) eventsDelivered(receiver string, n int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		m, err := a.metrics(`seckill_events_delivered_total{receiver="` + receiver + `"`)
		if err != nil {
			return err
		}
		var got float64
		for _, v := range m {
			got += v
		}
		if int64(got) >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%.0f of %d events delivered to %s after %s", got, n, receiver, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eventsSettled waits until receiver has no event pending and none dead,
// as GET /admin/events/receivers tells.
func (a *api) eventsSettled(receiver string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		r, err := a.c.AdminListEventReceiversWithResponse(context.Background())
		if err != nil {
			return err
		}
		if r.JSON200 == nil {
			return fmt.Errorf("event receivers: %d %s", r.StatusCode(), r.Body)
		}
		for _, it := range r.JSON200.Items {
			if it.Receiver != receiver {
				continue
			}
			if it.Dead > 0 {
				return fmt.Errorf("receiver %s: %d dead letters", it.Receiver, it.Dead)
			}
			if it.Pending == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("receiver %s: events still pending after %s: %+v", receiver, timeout, r.JSON200.Items)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// eventReceiver makes the receiver called name for one sale.
func (b *bench) eventReceiver(name string) (eventReceiver, error) {
	nothing := func() {}
	switch name {
	case "off":
		return eventReceiver{name: name, stop: nothing}, nil
	case "webhook":
		return webhookReceiver(name, func(int64) time.Duration { return 0 }), nil
	case "webhook-50ms":
		return webhookReceiver(name, func(int64) time.Duration { return 50 * time.Millisecond }), nil
	case "webhook-50ms-c256":
		rc := webhookReceiver(name, func(int64) time.Duration { return 50 * time.Millisecond })
		rc.env = append(rc.env, "SECKILL_EVENTS_CONCURRENCY=256")
		return rc, nil
	case "webhook-1s-in-100":
		return webhookReceiver(name, func(n int64) time.Duration {
			if n%100 == 0 {
				return time.Second
			}
			return 0
		}), nil
	case "nats":
		prefix := "loadbench" + b.tag
		return eventReceiver{name: name, receiver: "nats", env: []string{"SECKILL_EVENTS_NATS_URL=" + b.cfg.natsURL, "SECKILL_EVENTS_NATS_SUBJECT=" + prefix},
			stop: func() { deleteStream(b.cfg.natsURL, strings.ToUpper(prefix)+"_EVENTS") }}, nil
	case "rabbitmq":
		vhost := "loadbench-" + b.tag
		if err := rabbitmqctl("add_vhost", vhost); err != nil {
			return eventReceiver{}, err
		}
		if err := rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*"); err != nil {
			return eventReceiver{}, err
		}
		return eventReceiver{name: name, receiver: "amqp", env: []string{"SECKILL_EVENTS_AMQP_URL=" + strings.TrimSuffix(b.cfg.amqpURL, "/") + "/" + vhost},
			stop: func() { _ = rabbitmqctl("delete_vhost", vhost) }}, nil
	case "kfake":
		kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "seckill.orders"))
		if err != nil {
			return eventReceiver{}, err
		}
		return eventReceiver{name: name, receiver: "kafka", env: []string{"SECKILL_EVENTS_KAFKA_BROKERS=" + kc.ListenAddrs()[0]}, stop: kc.Close}, nil
	}
	return eventReceiver{}, fmt.Errorf("-events: no receiver %q (one of %s)", name, strings.Join(eventReceiverNames, ", "))
}

// webhookReceiver is a webhook server in this process that waits delay(n)
// before answering its n-th request 204.
func webhookReceiver(name string, delay func(n int64) time.Duration) eventReceiver {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if d := delay(n.Add(1)); d > 0 {
			time.Sleep(d)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	return eventReceiver{name: name, receiver: name, stop: srv.Close, env: []string{
		"SECKILL_EVENTS_WEBHOOK_URL=" + name + "=" + srv.URL,
		"SECKILL_EVENTS_WEBHOOK_SECRET=whsec_bG9hZGJlbmNoLWV2ZW50cy1zZWNyZXQtMDEyMzQ1Ng==",
	}}
}

// deleteStream deletes the JetStream stream a server made for its events.
func deleteStream(url, stream string) {
	nc, err := nats.Connect(url)
	if err != nil {
		return
	}
	defer nc.Close()
	if js, err := jetstream.New(nc); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, stream)
	}
}

func rabbitmqctl(args ...string) error {
	ctl, err := exec.LookPath("rabbitmqctl")
	if err != nil {
		ctl = "/usr/sbin/rabbitmqctl" // Debian's, which not every PATH has
	}
	if out, err := exec.Command(ctl, append([]string{"-q"}, args...)...).CombinedOutput(); err != nil { //nolint:gosec // rabbitmqctl with the bench's own vhost
		return fmt.Errorf("rabbitmqctl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}
