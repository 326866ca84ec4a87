package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redlock takes one lock on N independent Redis masters (not replicas of each
// other, not one Cluster): the lock is held when a majority (N/2+1) accepted
// it within its validity, TTL − elapsed − drift. It survives the loss of a
// minority of nodes. Its safety rests on bounded clock drift and bounded
// process pauses; for correctness against pauses, fence the protected
// resource instead (see the package documentation).
//
// The Lease it returns acts on every node: Extend holds when a quorum
// renewed within the new validity; Unlock succeeds when at least one node
// still had the lock (a node that did not answer drops it at its TTL); TTL
// needs a quorum. It has no fencing token and waits by backoff only.
type Redlock struct {
	nodes       []redis.UniversalClient
	prefix      string
	driftFactor float64
	nodeTimeout time.Duration
	backoff     backoff
	env         *env
}

// NewRedlock returns a Redlock over nodes, configured by WithPrefix,
// WithBackoff and WithObserver. Each node's command is bounded by 50ms (never
// more than a tenth of the TTL) through its context: give the node clients
// ContextTimeoutEnabled so that a stalled node cannot eat the validity.
func NewRedlock(nodes []redis.UniversalClient, opts ...Option) *Redlock {
	o := newOptions(opts)
	r := &Redlock{
		nodes:       slices.Clone(nodes),
		prefix:      o.c.prefix,
		driftFactor: o.c.driftFactor,
		nodeTimeout: o.c.nodeTimeout,
		backoff:     o.backoff,
		env:         newEnv(o),
	}
	if r.driftFactor <= 0 { // a negative drift would lengthen the validity
		r.driftFactor = 0.01
	}
	if r.nodeTimeout <= 0 {
		r.nodeTimeout = 50 * time.Millisecond
	}
	return r
}

// Close stops the watchdogs of the locks the Redlock handed out and waits for
// them. Held locks expire by their TTL.
func (r *Redlock) Close() error {
	r.env.close()
	return nil
}

// quorum is the number of nodes that must agree: N/2+1.
func (r *Redlock) quorum() int { return len(r.nodes)/2 + 1 }

func (r *Redlock) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*r.driftFactor) + 2*time.Millisecond
}

func (r *Redlock) timeout(ttl time.Duration) time.Duration {
	return max(time.Millisecond, min(r.nodeTimeout, ttl/10))
}

// TryLock makes one Redlock attempt: SET NX PX on every node at once, each
// bounded by the node timeout. It succeeds when a quorum accepted and the
// validity (TTL − elapsed − drift) is still positive; otherwise it releases
// the lock on every node and returns an error matching ErrNotObtained (joined
// with the node errors when nodes failed). WithFencing has no effect.
func (r *Redlock) TryLock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Lease, error) {
	return r.acquire(ctx, name, ttl, opts, false)
}

// Lock is TryLock retried with backoff until it succeeds or its budget or ctx
// ends; errors as for Client.Lock.
func (r *Redlock) Lock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Lease, error) {
	return r.acquire(ctx, name, ttl, opts, true)
}

func (r *Redlock) acquire(ctx context.Context, name string, ttl time.Duration, opts []Option, wait bool) (*Lease, error) {
	if err := validate(name, ttl); err != nil {
		return nil, err
	}
	if r.env.closed() {
		return nil, ErrClosed
	}
	if ttl <= r.drift(ttl) {
		return nil, ErrInvalidTTL
	}
	cfg := callOptions(r.backoff, opts)
	m := &redlockHold{rl: r}
	m.l.key, m.l.token = newKeys(r.prefix, name).mutex(), newToken()
	m.keyv, m.arg = []string{m.l.key}, m.l.token
	begin := r.env.now()
	var start time.Time
	var lastErr error
	try := func(ctx context.Context) (bool, error) {
		var ok bool
		start, ok, lastErr = r.tryOnce(ctx, m, ttl)
		return ok, nil
	}
	ok, _ := try(ctx)
	var err error
	if !ok {
		err = lastErr
		if wait {
			if err = waitLoop(ctx, r.env, nil, "", &cfg, try); err != nil && lastErr != nil {
				err = fmt.Errorf("%w (last attempt: %w)", err, lastErr)
			}
		}
	}
	r.env.acquired(kindRedlock, wait, r.env.now().Sub(begin), err)
	if err != nil {
		return nil, err
	}
	m.l.slack = r.drift(ttl)
	m.l.start(r.env, kindRedlock, m, ttl, start.Add(-m.l.slack), &cfg)
	return &m.l, nil
}

// redlockHold is the handle of a lock held on a quorum of nodes.
type redlockHold struct {
	l    Lease
	rl   *Redlock
	keyv []string
	arg  any
}

func (m *redlockHold) release(ctx context.Context) (bool, error) {
	return m.rl.release(ctx, m, m.l.ttl)
}

func (m *redlockHold) renew(ctx context.Context, ttl time.Duration) (bool, error) {
	return m.rl.extend(ctx, m, ttl)
}

func (m *redlockHold) remaining(ctx context.Context) (time.Duration, error) {
	return m.rl.ttl(ctx, m)
}

// tryOnce runs one round on all nodes. It returns the round's start time and
// whether it obtained the lock; when not, the error says why and the lock has
// been released on every node.
func (r *Redlock) tryOnce(ctx context.Context, m *redlockHold, ttl time.Duration) (time.Time, bool, error) {
	start := r.env.now()
	oks, errs := r.each(ctx, ttl, func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		return c.SetNX(ctx, m.keyv[0], m.arg, ttl).Result()
	})
	validity := ttl - r.env.now().Sub(start) - r.drift(ttl)
	if oks >= r.quorum() && validity > 0 {
		return start, true, nil
	}
	// Release everywhere, also on nodes that did not answer: the SET may have
	// landed after the timeout.
	_, _ = r.release(context.WithoutCancel(ctx), m, ttl)
	if err := errors.Join(errs...); err != nil {
		return start, false, fmt.Errorf("%w: %d of %d nodes, quorum %d: %w", ErrNotObtained, oks, len(r.nodes), r.quorum(), err)
	}
	return start, false, ErrNotObtained
}

// each runs f on every node concurrently with the node timeout and counts the
// nodes where it returned true.
func (r *Redlock) each(ctx context.Context, ttl time.Duration, f func(context.Context, redis.UniversalClient) (bool, error)) (int, []error) {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		oks  int
		errs []error
	)
	to := r.timeout(ttl)
	for _, c := range r.nodes {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, to)
			ok, err := f(ctx, c)
			cancel()
			mu.Lock()
			if ok {
				oks++
			}
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return oks, errs
}

// release runs the token-checked release on every node, each bounded by the
// node timeout for ttl. It reports whether any node still had the lock; the
// error is set only when no node answered.
func (r *Redlock) release(ctx context.Context, m *redlockHold, ttl time.Duration) (bool, error) {
	oks, errs := r.each(ctx, ttl, func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		n, err := unlockScript.Run(ctx, c, m.keyv, m.arg).Int64()
		return n == 1, err
	})
	if oks == 0 && len(errs) == len(r.nodes) {
		return false, errors.Join(errs...)
	}
	return oks > 0, nil
}

// extend renews the lock on every node; it holds when a quorum renewed within
// the validity of the new TTL.
func (r *Redlock) extend(ctx context.Context, m *redlockHold, ttl time.Duration) (bool, error) {
	start := r.env.now()
	oks, errs := r.each(ctx, ttl, func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		n, err := extendScript.Run(ctx, c, m.keyv, m.arg, ttl.Milliseconds()).Int64()
		return n == 1, err
	})
	if oks >= r.quorum() && ttl-r.env.now().Sub(start)-r.drift(ttl) > 0 {
		return true, nil
	}
	if len(errs) > len(r.nodes)-r.quorum() {
		// Too many nodes did not answer to know: let the caller retry until
		// the validity runs out.
		return false, errors.Join(errs...)
	}
	return false, nil
}

// ttl returns the quorum-th largest remaining TTL among the nodes that hold
// the lock, less the drift allowance.
func (r *Redlock) ttl(ctx context.Context, m *redlockHold) (time.Duration, error) {
	var mu sync.Mutex
	var ttls []time.Duration
	_, errs := r.each(ctx, m.l.ttl, func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		ms, err := pttlScript.Run(ctx, c, m.keyv, m.arg).Int64()
		if err == nil && ms > 0 {
			mu.Lock()
			ttls = append(ttls, time.Duration(ms)*time.Millisecond)
			mu.Unlock()
		}
		return false, err
	})
	q := r.quorum()
	if len(ttls) < q {
		if len(errs) > len(r.nodes)-q {
			return 0, errors.Join(errs...)
		}
		return 0, ErrNotHeld
	}
	slices.Sort(ttls)
	d := ttls[len(ttls)-q] - r.drift(m.l.ttl)
	if d <= 0 {
		return 0, ErrNotHeld
	}
	return d, nil
}
