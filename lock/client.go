package lock

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// env is what every lease needs from the Client or Redlock that made it.
type env struct {
	now      func() time.Time
	observer Observer
	closing  chan struct{}
	closeMu  sync.Mutex
	isClosed bool
	wg       sync.WaitGroup // watchdogs
}

func newEnv(o options) *env {
	return &env{now: o.c.now, observer: o.c.observer, closing: make(chan struct{})}
}

// goWatchdog starts f as a goroutine owned by the env, unless it is closed.
func (e *env) goWatchdog(f func()) bool {
	e.closeMu.Lock()
	defer e.closeMu.Unlock()
	if e.isClosed {
		return false
	}
	e.wg.Go(f)
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

// Client takes locks on one Redis deployment: standalone, Sentinel or
// Cluster. It is safe for concurrent use; make one per process and Close it
// to stop its pub/sub connection and the watchdogs of its leases.
type Client struct {
	rdb     redis.UniversalClient
	prefix  string
	backoff backoff
	env     *env
	notify  *hub
}

// New returns a Client that locks through rdb, configured by WithPrefix,
// WithBackoff and WithObserver. It opens no connection until a caller waits
// for a lock.
func New(rdb redis.UniversalClient, opts ...Option) *Client {
	o := newOptions(opts)
	return &Client{
		rdb:     rdb,
		prefix:  o.c.prefix,
		backoff: o.backoff,
		env:     newEnv(o),
		notify:  newHub(rdb),
	}
}

// Close stops the shared pub/sub connection and the watchdogs, and waits for
// their goroutines. Waiting Lock calls and new acquisitions return ErrClosed.
// Held locks are not released (their leases can still Unlock them) and
// otherwise expire by their TTL. Close is idempotent and returns nil.
func (c *Client) Close() error {
	c.env.close()
	_ = c.notify.close()
	return nil
}

// newToken returns 128 random bits, base64-encoded (22 bytes).
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms (Go ≥ 1.24)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// attempt is one try to acquire: acquired, or not (the lock is busy), or an
// error that ends the acquisition.
type attempt func(ctx context.Context) (bool, error)

// tryThenWait makes the first try and, when that finds the lock taken and
// wait is set, waits for it on channel; the outcome and the time it took are
// reported as a k. It returns when the try that got the lock began,
// ErrNotObtained when it was not got, or a *waitError when ctx ended during
// the first try.
func (c *Client) tryThenWait(ctx context.Context, k kind, channel string, cfg options, wait bool, try attempt) (start time.Time, err error) {
	begin := c.env.now()
	defer func() { c.env.acquired(k, wait, c.env.now().Sub(begin), err) }()
	ok, err := try(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return begin, &waitError{ctx.Err()}
	case err != nil || ok:
		return begin, err
	case !wait:
		return begin, ErrNotObtained
	}
	var n *hub
	if !cfg.noWakeup {
		n = c.notify
	}
	err = waitLoop(ctx, c.env, n, channel, &cfg, func(ctx context.Context) (bool, error) {
		start = c.env.now()
		return try(ctx)
	})
	return start, err
}

// waitLoop retries try until it succeeds, the context ends, or the call's
// wait budget is used up. Between tries it sleeps by cfg.backoff, and wakes
// at once when the hub (if any) reports a release on channel.
func waitLoop(ctx context.Context, e *env, n *hub, channel string, cfg *options, try attempt) error {
	var wake <-chan struct{}
	if n != nil {
		c := make(chan struct{}, 1)
		// A failed SUBSCRIBE only costs the wake-up: the waiter stays
		// registered (go-redis subscribes when it reconnects) and keeps its
		// backoff timer.
		if w, _ := n.add(ctx, channel, c); w != nil {
			defer w.remove()
			wake = c
		}
	}
	var deadline <-chan time.Time
	if cfg.wait > 0 {
		t := time.NewTimer(cfg.wait)
		defer t.Stop()
		deadline = t.C
	}
	timer := time.NewTimer(cfg.backoff.delay(0))
	defer timer.Stop()
	for retry := 0; ; retry++ {
		if cfg.maxRetries > 0 && retry >= cfg.maxRetries {
			return errRetriesExhausted
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
