package lock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedlockOptions configures a Redlock. The zero value is usable.
type RedlockOptions struct {
	// Prefix starts every key; default DefaultPrefix.
	Prefix string
	// DriftFactor is the share of the TTL set aside for clock drift between
	// the nodes and this process; default 0.01. A constant 2ms is added.
	DriftFactor float64
	// NodeTimeout bounds each node's command, and must be much smaller than
	// the TTL so a dead node cannot eat the validity; default 50ms, and never
	// more than ttl/10 for a given call. It bites through the context: give
	// the node clients ContextTimeoutEnabled (or a short ReadTimeout) so a
	// stalled node does not hold a call up to the client's own timeout.
	NodeTimeout time.Duration
	// Backoff is the retry schedule of Lock. Redlock waits by backoff only.
	Backoff Backoff
	// Metrics, when not nil, records under kind "redlock".
	Metrics *Metrics
	// Now is the clock used to measure elapsed time and validity; default
	// time.Now.
	Now func() time.Time
}

// Redlock takes one lock on N independent Redis masters (not replicas of each
// other, not one Cluster): the lock is held when a majority (N/2+1) accepted
// it within its validity, TTL − elapsed − drift. It survives the loss of a
// minority of nodes. Its safety rests on bounded clock drift and bounded
// process pauses; for correctness against pauses, fence the protected
// resource instead (see the package documentation).
//
// The Mutex it returns acts on every node: Extend holds when a quorum
// renewed within the new validity; Unlock succeeds when at least one node
// still had the lock (a node that did not answer drops it at its TTL); TTL
// and Held need a quorum.
type Redlock struct {
	nodes       []redis.UniversalClient
	prefix      string
	driftFactor float64
	nodeTimeout time.Duration
	backoff     Backoff
	env         *env
}

// NewRedlock returns a Redlock over nodes.
func NewRedlock(nodes []redis.UniversalClient, opts RedlockOptions) *Redlock {
	r := &Redlock{
		nodes:       slices.Clone(nodes),
		prefix:      opts.Prefix,
		driftFactor: opts.DriftFactor,
		nodeTimeout: opts.NodeTimeout,
		backoff:     opts.Backoff.withDefaults(),
		env:         newEnv(opts.Now, opts.Metrics),
	}
	r.prefix = cmp.Or(r.prefix, DefaultPrefix)
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

// Quorum is the number of nodes that must agree: N/2+1.
func (r *Redlock) Quorum() int { return len(r.nodes)/2 + 1 }

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
// with the node errors when nodes failed). WithFencing is ignored.
func (r *Redlock) TryLock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Mutex, error) {
	return r.acquire(ctx, name, ttl, opts, false)
}

// Lock is TryLock retried with backoff until it succeeds or its budget or ctx
// ends; errors as for Client.Lock.
func (r *Redlock) Lock(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Mutex, error) {
	return r.acquire(ctx, name, ttl, opts, true)
}

func (r *Redlock) acquire(ctx context.Context, name string, ttl time.Duration, opts []Option, wait bool) (*Mutex, error) {
	if err := validate(name, ttl); err != nil {
		return nil, err
	}
	if r.env.closed() {
		return nil, ErrClosed
	}
	if ttl <= r.drift(ttl) {
		return nil, ErrInvalidTTL
	}
	cfg := newConfig(r.backoff, opts)
	m := newMutex(r.prefix, name)
	m.rl = r
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
	r.env.metrics.outcome(kindRedlock, err, r.env.now().Sub(begin), wait)
	if err != nil {
		return nil, err
	}
	m.lease.slack = r.drift(ttl)
	m.lease.init(r.env, kindRedlock, m, ttl, start.Add(-m.lease.slack), cfg.watchdog, cfg.maxRenewals)
	return m, nil
}

// tryOnce runs one round on all nodes. It returns the round's start time and
// whether it obtained the lock; when not, the error says why and the lock has
// been released on every node.
func (r *Redlock) tryOnce(ctx context.Context, m *Mutex, ttl time.Duration) (time.Time, bool, error) {
	start := r.env.now()
	oks, errs := r.each(ctx, ttl, func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		return c.SetNX(ctx, m.keyv[0], m.arg, ttl).Result()
	})
	validity := ttl - r.env.now().Sub(start) - r.drift(ttl)
	if oks >= r.Quorum() && validity > 0 {
		return start, true, nil
	}
	// Release everywhere, also on nodes that did not answer: the SET may have
	// landed after the timeout.
	_, _ = r.release(context.WithoutCancel(ctx), m, ttl)
	if err := errors.Join(errs...); err != nil {
		return start, false, fmt.Errorf("%w: %d of %d nodes, quorum %d: %w", ErrNotObtained, oks, len(r.nodes), r.Quorum(), err)
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
func (r *Redlock) release(ctx context.Context, m *Mutex, ttl time.Duration) (bool, error) {
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
func (r *Redlock) extend(ctx context.Context, m *Mutex, ttl time.Duration) (bool, error) {
	start := r.env.now()
	oks, errs := r.each(ctx, ttl, func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		n, err := extendScript.Run(ctx, c, m.keyv, m.arg, ttl.Milliseconds()).Int64()
		return n == 1, err
	})
	if oks >= r.Quorum() && ttl-r.env.now().Sub(start)-r.drift(ttl) > 0 {
		return true, nil
	}
	if len(errs) > len(r.nodes)-r.Quorum() {
		// Too many nodes did not answer to know: let the caller retry until
		// the validity runs out.
		return false, errors.Join(errs...)
	}
	return false, nil
}

// ttl returns the quorum-th largest remaining TTL among the nodes that hold
// the lock, less the drift allowance.
func (r *Redlock) ttl(ctx context.Context, m *Mutex) (time.Duration, error) {
	var mu sync.Mutex
	var ttls []time.Duration
	_, errs := r.each(ctx, m.ttl, func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		ms, err := pttlScript.Run(ctx, c, m.keyv, m.arg).Int64()
		if err == nil && ms > 0 {
			mu.Lock()
			ttls = append(ttls, time.Duration(ms)*time.Millisecond)
			mu.Unlock()
		}
		return false, err
	})
	q := r.Quorum()
	if len(ttls) < q {
		if len(errs) > len(r.nodes)-q {
			return 0, errors.Join(errs...)
		}
		return 0, ErrNotHeld
	}
	slices.Sort(ttls)
	d := ttls[len(ttls)-q] - r.drift(m.ttl)
	if d <= 0 {
		return 0, ErrNotHeld
	}
	return d, nil
}
