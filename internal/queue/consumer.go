package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// Handler handles a claimed batch and returns one result per task, in order:
// nil acks the task, an error wrapping ErrRelease hands it back without
// counting the attempt, any other error nacks it (retry with backoff, or dead
// letter after its last attempt). A nil slice acks the whole batch; a shorter
// one nacks the tasks without a result. A panic nacks the whole batch.
//
// ctx stays alive while the consumer shuts down, for up to
// ConsumerOptions.ShutdownGrace; once it is cancelled, tasks the handler
// reports with ctx's error are released rather than nacked.
//
// Delivery is at least once: a handler must tolerate seeing a task again
// (after a crash or an expired lease) and should make its effect idempotent.
type Handler func(ctx context.Context, tasks []*Claimed) []error

// Each adapts a per-task function into a Handler that runs the batch's tasks
// one after another; when ctx is cancelled the tasks not yet started are
// released.
func Each(f func(ctx context.Context, t *Claimed) error) Handler {
	return func(ctx context.Context, tasks []*Claimed) []error {
		errs := make([]error, len(tasks))
		for i, t := range tasks {
			if ctx.Err() != nil {
				errs[i] = ErrRelease
				continue
			}
			errs[i] = f(ctx, t)
		}
		return errs
	}
}

// ConsumerOptions configure a Consumer. The zero value is usable.
type ConsumerOptions struct {
	// Workers claiming and handling batches in parallel; default 1.
	Workers int
	// BatchSize is the most tasks per claim; default 100, at most MaxClaim.
	BatchSize int
	// Lease each claim holds its tasks for; default 30s. Leases of a batch
	// still being handled are extended every Lease/3.
	Lease time.Duration
	// MaxIdle is the longest an idle worker sleeps before claiming again. It
	// is the sweep interval: a task whose holder died is back in work at most
	// Lease + MaxIdle after it was claimed. Default 2s.
	MaxIdle time.Duration
	// Waker wakes idle workers when a task becomes due earlier than they
	// planned; nil: they notice at their next MaxIdle tick.
	Waker *Waker
	// ShutdownGrace is how long running handlers may go on after Run's
	// context is cancelled before their own context is cancelled; default 10s.
	ShutdownGrace time.Duration
	// OpTimeout bounds each Redis call of the consumer; default 5s.
	OpTimeout time.Duration
	// Linger is how long a worker woken by a new task waits before claiming,
	// so tasks arriving together are claimed, handled and acked as one batch.
	// It trades that much delivery latency for fewer Redis calls per task
	// when producers enqueue one task at a time. Default 0: claim at once.
	Linger time.Duration
}

// Consumer runs a pool of workers on one queue. Run it in a goroutine per
// queue; many consumers (one per SKU) share one Waker and cost nothing but
// a parked goroutine per worker while idle.
type Consumer struct {
	q    *Queue
	h    Handler
	o    ConsumerOptions
	wake chan struct{}
}

// NewConsumer returns a consumer of q that passes batches to h.
func NewConsumer(q *Queue, h Handler, o ConsumerOptions) *Consumer {
	orDefault(&o.Workers, 1)
	orDefault(&o.BatchSize, 100)
	o.BatchSize = min(o.BatchSize, MaxClaim)
	orDefault(&o.Lease, 30*time.Second)
	orDefault(&o.MaxIdle, 2*time.Second)
	orDefault(&o.ShutdownGrace, 10*time.Second)
	orDefault(&o.OpTimeout, 5*time.Second)
	return &Consumer{q: q, h: h, o: o, wake: make(chan struct{}, 1)}
}

// Run claims and handles tasks until ctx is cancelled, then shuts down in
// order: no new claims, running batches finish (or are released once
// ShutdownGrace is over), their results are acked or nacked, and Run
// returns. It returns nil after a shutdown, or the Waker's subscribe error.
func (c *Consumer) Run(ctx context.Context) error {
	if c.o.Waker != nil {
		stop, err := c.o.Waker.register(ctx, c.q.k.wake, c.wakeFor)
		if err != nil {
			return fmt.Errorf("queue %s: subscribe wake-ups: %w", c.q.name, err)
		}
		defer stop()
	}
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()
	done := make(chan struct{})
	var grace sync.WaitGroup
	grace.Go(func() {
		select {
		case <-done:
		case <-ctx.Done():
			t := time.NewTimer(c.o.ShutdownGrace)
			defer t.Stop()
			select {
			case <-done:
			case <-t.C:
				hcancel()
			}
		}
	})
	var workers sync.WaitGroup
	for range c.o.Workers {
		workers.Go(func() { c.work(ctx, hctx) })
	}
	workers.Wait()
	close(done)
	grace.Wait()
	return nil
}

func (c *Consumer) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.o.OpTimeout)
}

// wakeFor wakes a worker for a task that became the queue's earliest, due
// at the published Unix ms, unless it is due later than MaxIdle from now:
// every idle worker claims again within MaxIdle and then sleeps until the
// queue's earliest task, so waking it sooner would only cost a claim that
// finds nothing due (the payment deadline a drained batch schedules, say).
func (c *Consumer) wakeFor(payload string) {
	if due, err := strconv.ParseInt(payload, 10, 64); err == nil && fromMS(due).After(c.q.o.Now().Add(c.o.MaxIdle)) {
		return
	}
	c.signal()
}

func (c *Consumer) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Consumer) work(ctx, hctx context.Context) {
	for ctx.Err() == nil {
		// The claim itself is not cancelled by shutdown: a reply lost to a
		// cancel would leave tasks claimed until their lease expired.
		octx, cancel := c.opCtx()
		tasks, next, err := c.q.claim(octx, c.o.BatchSize, c.o.Lease)
		cancel()
		if err != nil {
			c.q.o.Logger.Error("queue: claim failed", "queue", c.q.name, "err", err)
			c.sleep(ctx, min(c.o.MaxIdle, time.Second))
			continue
		}
		if len(tasks) > 0 {
			full := len(tasks) == c.o.BatchSize
			if full {
				c.signal() // more may be due: let another idle worker claim too
			}
			c.process(hctx, tasks)
			if full || c.o.Waker == nil {
				continue
			}
			// The claim took every task due then. One enqueued since, due
			// before the rest, has woken the consumer through the Waker, so
			// the worker sleeps as an idle one does rather than claim what
			// is likely nothing.
		}
		d := c.o.MaxIdle
		if !next.IsZero() {
			d = min(d, next.Sub(c.q.o.Now()))
		}
		c.sleep(ctx, max(d, time.Millisecond))
	}
}

func (c *Consumer) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-c.wake:
		if c.o.Linger > 0 {
			t.Reset(c.o.Linger)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
	case <-t.C:
	}
}

// process hands tasks to the handler while extending their leases, then
// settles every task by the handler's result.
func (c *Consumer) process(hctx context.Context, tasks []*Claimed) {
	stopExtend := make(chan struct{})
	var ext sync.WaitGroup
	ext.Go(func() { c.extend(stopExtend, tasks) })
	then := &followUps{q: c.q}
	results := c.call(context.WithValue(hctx, followKey{}, then), tasks)
	close(stopExtend)
	ext.Wait()

	var ack, nack, rel []*Claimed
	var causes []error
	for i, t := range tasks {
		var err error
		switch {
		case results == nil:
		case i < len(results):
			err = results[i]
		default:
			err = errors.New("queue: handler returned no result for the task")
		}
		switch {
		case err == nil:
			ack = append(ack, t)
		case errors.Is(err, ErrRelease), hctx.Err() != nil && errors.Is(err, hctx.Err()):
			rel = append(rel, t)
		default:
			nack = append(nack, t)
			causes = append(causes, err)
		}
	}
	log := c.q.o.Logger
	octx, cancel := c.opCtx()
	defer cancel()
	next := then.take()
	if len(ack) == 0 && len(next) > 0 {
		// Nothing to ack: the follow-ups go on their own. A failure
		// loses them only with tasks that are handled again or dead.
		if _, err := c.q.enqueueMany(octx, c.q.o.Now(), next); err != nil {
			log.Warn("queue: follow-up tasks not enqueued", "queue", c.q.name, "err", err)
		}
	}
	if stale, err := c.q.ackThen(octx, ack, next); err != nil || len(stale) > 0 {
		log.Warn("queue: ack incomplete; unacked tasks will be redelivered", "queue", c.q.name, "stale", stale, "err", err)
	}
	if len(nack) > 0 {
		if _, stale, err := c.q.NackBatch(octx, nack, causes); err != nil || len(stale) > 0 {
			log.Warn("queue: nack incomplete", "queue", c.q.name, "stale", stale, "err", err)
		}
	}
	if len(rel) > 0 {
		if stale, err := c.q.Release(octx, rel...); err != nil || len(stale) > 0 {
			log.Warn("queue: release incomplete", "queue", c.q.name, "stale", stale, "err", err)
		}
	}
}

func (c *Consumer) call(ctx context.Context, tasks []*Claimed) (results []error) {
	defer func() {
		if p := recover(); p != nil {
			err := fmt.Errorf("queue: handler panic: %v", p)
			results = make([]error, len(tasks))
			for i := range results {
				results[i] = err
			}
		}
	}()
	return c.h(ctx, tasks)
}

// extend renews the batch's leases every Lease/3 until stop is closed.
func (c *Consumer) extend(stop <-chan struct{}, tasks []*Claimed) {
	t := time.NewTicker(max(c.o.Lease/3, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			octx, cancel := c.opCtx()
			stale, err := c.q.extend(octx, c.o.Lease, tasks, false)
			cancel()
			if err != nil || len(stale) > 0 {
				c.q.o.Logger.Warn("queue: lease extension failed; tasks may be redelivered",
					"queue", c.q.name, "lost", stale, "err", err)
			}
		}
	}
}
