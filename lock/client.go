package lock

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/fanout"
)

// Options configures a Client. The zero value is usable.
type Options struct {
	// Prefix starts every key and channel name; default DefaultPrefix.
	Prefix string
	// Backoff is the default retry schedule of Lock calls.
	Backoff Backoff
	// Metrics, when not nil, receives acquisitions, failures, wait times,
	// renewals and lost locks. Nil turns metrics off at no cost.
	Metrics *Metrics
	// Now is the clock used to track expiry of held locks; default time.Now.
	// Tests inject one to show cases a real clock cannot.
	Now func() time.Time
}

// env is what every handle needs from the Client or Redlock that made it.
type env struct {
	now      func() time.Time
	metrics  *Metrics
	closing  chan struct{}
	closeMu  sync.Mutex
	isClosed bool
	wg       sync.WaitGroup // watchdogs
}

func newEnv(now func() time.Time, m *Metrics) *env {
	if now == nil {
		now = time.Now
	}
	return &env{now: now, metrics: m, closing: make(chan struct{})}
}

// goWatchdog starts f as a goroutine owned by the env, unless it is closed.
func (e *env) goWatchdog(f func()) bool {
	e.closeMu.Lock()
	defer e.closeMu.Unlock()
	if e.isClosed {
		return false
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		f()
	}()
	return true
}

func (e *env) closed() bool {
	select {
	case <-e.closing:
		return true
	default:
		return false
	}
}

// close stops every watchdog and waits for them. Locks stay in Redis until
// they are released or expire.
func (e *env) close() {
	e.closeMu.Lock()
	if !e.isClosed {
		e.isClosed = true
		close(e.closing)
	}
	e.closeMu.Unlock()
	e.wg.Wait()
}

// Client takes locks on one Redis deployment (standalone, Sentinel or
// Cluster). It is safe for concurrent use. Close it to stop its pub/sub
// connection and the watchdogs of the locks it handed out.
type Client struct {
	rdb     redis.UniversalClient
	prefix  string
	backoff Backoff
	env     *env
	notify  *fanout.Hub
}

// New returns a Client that locks through rdb. It opens no connection until
// a caller waits for a lock.
func New(rdb redis.UniversalClient, opts Options) *Client {
	prefix := opts.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Client{
		rdb:     rdb,
		prefix:  prefix,
		backoff: opts.Backoff.withDefaults(),
		env:     newEnv(opts.Now, opts.Metrics),
		notify:  newNotifier(rdb),
	}
}

// newNotifier shares one pub/sub connection among all waiters of a Client. A
// channel is subscribed while at least one local waiter waits on it. A release
// message with payload "1" (mutex, reentrant) wakes one local waiter, the one
// that has waited longest without a pending wake-up, so a release does not
// send every waiter of the process to Redis at once; the others keep their
// backoff timers. Payload "a" (read-write lock) and a (re)subscription
// confirmation wake every waiter of the channel: several readers may go at
// once, and a release published before the subscription took effect must not
// be slept through.
func newNotifier(rdb redis.UniversalClient) *fanout.Hub {
	return fanout.New(rdb, fanout.Options{
		WakeOne:         func(payload string) bool { return payload != "a" },
		WakeOnSubscribe: true,
		Timeout:         time.Second,
	})
}

// Close stops the shared pub/sub connection and the watchdogs, and waits for
// their goroutines. Waiting Lock calls and new acquisitions return ErrClosed.
// Held locks are not released (handles can still Unlock them) and otherwise
// expire by their TTL. Close is idempotent and always returns nil.
func (c *Client) Close() error {
	c.env.close()
	_ = c.notify.Close()
	return nil
}

// Key returns the Redis key of the mutex called name, for callers that check
// ownership inside their own scripts.
func (c *Client) Key(name string) string { return newKeys(c.prefix, name).mutex() }

// newToken returns 128 random bits, base64-encoded (22 bytes).
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms (Go ≥ 1.24)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// attempt is one try to acquire: acquired, or not (the lock is busy), or an
// error that ends the acquisition.
type attempt func(ctx context.Context) (bool, error)

// wait retries try until it succeeds, the context ends, or the call's wait
// budget is used up. Between tries it sleeps by cfg.backoff, and wakes at once
// when the notifier reports a release on channel (unless disabled).
func (c *Client) wait(ctx context.Context, channel string, cfg *config, try attempt) error {
	var n *fanout.Hub
	if !cfg.noWakeup {
		n = c.notify
	}
	return waitLoop(ctx, c.env, n, channel, cfg, try)
}

// tryThenWait makes the first try and, when that finds the lock taken and
// wait is set, waits for it on channel (waitFor); the outcome and the time
// it took are counted as a k. It returns when the try that got the lock
// began, ErrNotObtained when it was not got, or a *waitError when ctx ended
// during the first try.
func (c *Client) tryThenWait(ctx context.Context, k kind, channel string, cfg config, wait bool, try attempt) (start time.Time, err error) {
	begin := c.env.now()
	defer func() { c.env.metrics.outcome(k, err, c.env.now().Sub(begin), wait) }()
	ok, err := try(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return begin, &waitError{ctx.Err()}
	case err != nil || ok:
		return begin, err
	case !wait:
		return begin, ErrNotObtained
	}
	return c.waitFor(ctx, channel, &cfg, try)
}

// waitFor is wait that also returns when the successful attempt was sent,
// the start of the lock's TTL.
func (c *Client) waitFor(ctx context.Context, channel string, cfg *config, try attempt) (time.Time, error) {
	var start time.Time
	err := c.wait(ctx, channel, cfg, func(ctx context.Context) (bool, error) {
		start = c.env.now()
		return try(ctx)
	})
	return start, err
}

func waitLoop(ctx context.Context, e *env, n *fanout.Hub, channel string, cfg *config, try attempt) error {
	var wake <-chan struct{}
	if n != nil {
		c := make(chan struct{}, 1)
		// A failed SUBSCRIBE only costs the wake-up: the waiter stays
		// registered (go-redis subscribes when it reconnects) and keeps its
		// backoff timer.
		if w, _ := n.Add(ctx, channel, c); w != nil {
			defer w.Remove()
			wake = c
		}
	}
	var deadline <-chan time.Time
	if cfg.waitTimeout > 0 {
		t := time.NewTimer(cfg.waitTimeout)
		defer t.Stop()
		deadline = t.C
	}
	timer := time.NewTimer(cfg.backoff.delay(0))
	defer timer.Stop()
	for retry := 0; ; retry++ {
		if cfg.maxRetries > 0 && retry >= cfg.maxRetries {
			return ErrRetriesExhausted
		}
		if retry > 0 {
			timer.Reset(cfg.backoff.delay(retry))
		}
		select {
		case <-ctx.Done():
			return &waitError{ctx.Err()}
		case <-deadline:
			return ErrWaitTimeout
		case <-e.closing:
			return ErrClosed
		case <-wake:
		case <-timer.C:
		}
		ok, err := try(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return &waitError{ctx.Err()}
			}
			return err
		}
		if ok {
			return nil
		}
	}
}
