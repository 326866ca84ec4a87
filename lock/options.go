package lock

import (
	"math/rand/v2"
	"time"
)

// Option configures a Client or a Redlock (given to New or NewRedlock), or
// one acquisition (given to TryLock or Lock, where it overrides the
// Client's). Each option says where it applies; elsewhere it has no effect.
type Option func(*options)

type options struct {
	c *clientOptions // nil in a call, where the Client's options do nothing

	// Client, Redlock and each call.
	backoff backoff

	// Each call.
	wait        time.Duration
	maxRenewals int
	maxRetries  int // tests only
	watchdog    bool
	fencing     bool
	noWakeup    bool
}

// clientOptions are the options of a Client or Redlock, apart so that the
// options of a call stay small: they are allocated on every call that has
// some.
type clientOptions struct {
	prefix   string
	observer Observer
	now      func() time.Time
	// Redlock only (set by tests).
	nodeTimeout time.Duration
	driftFactor float64
}

// client applies f to the Client's options, when o is those of a Client.
func (o *options) client(f func(c *clientOptions)) {
	if o.c != nil {
		f(o.c)
	}
}

// WithPrefix starts every Redis key and pub/sub channel of a Client or
// Redlock with prefix; the default is "lock:". The key of the mutex "job" is
// prefix+"{job}"; see the package documentation for the others.
func WithPrefix(prefix string) Option {
	return func(o *options) { o.client(func(c *clientOptions) { c.prefix = prefix }) }
}

// WithBackoff sets the retry schedule of a waiting Lock: the n-th wait is
// drawn from [d/2, d] with d = min(max, min·2ⁿ), so waiters that failed
// together do not retry together. The default is 2ms to 128ms. With the
// pub/sub wake-up (Client, the default) it is only the fallback for a missed
// release message; a Redlock waits by it alone. Client, Redlock or call.
func WithBackoff(minWait, maxWait time.Duration) Option {
	return func(o *options) { o.backoff = backoff{min: minWait, max: maxWait}.withDefaults() }
}

// WithObserver reports every acquisition, renewal and lost lock of a Client
// or Redlock to obs, for metrics (see package lockmetrics). Client or Redlock.
func WithObserver(obs Observer) Option {
	return func(o *options) { o.client(func(c *clientOptions) { c.observer = obs }) }
}

// WithWait bounds how long Lock waits; when d passes Lock returns
// ErrWaitTimeout. Without it Lock waits until its context ends. Call.
func WithWait(d time.Duration) Option {
	return func(o *options) { o.wait = d }
}

// WithWatchdog renews the lock every ttl/3 while it is held, until Unlock.
// maxRenewals > 0 caps the number of renewals (the lock then expires ttl
// after the last one); 0 renews without a cap. A renewal that finds the lock
// gone, or renewals failing until the TTL has passed, mark the lease lost
// (see Lease.Done). Call.
func WithWatchdog(maxRenewals int) Option {
	return func(o *options) { o.watchdog, o.maxRenewals = true, maxRenewals }
}

// WithFencing makes a mutex acquisition also issue a fencing token
// (Lease.Fence): an int64 strictly greater than that of every earlier
// acquisition of the same name. Acquire then runs a script (SET NX PX + INCR)
// instead of a plain SET. Call, on Client.TryLock and Client.Lock only.
func WithFencing() Option {
	return func(o *options) { o.fencing = true }
}

// withClock sets the clock of a Client or Redlock (tests).
func withClock(now func() time.Time) Option {
	return func(o *options) { o.client(func(c *clientOptions) { c.now = now }) }
}

// withoutWakeup makes Lock wait by backoff only (tests, and the comparison
// with polling libraries).
func withoutWakeup() Option {
	return func(o *options) { o.noWakeup = true }
}

// withMaxRetries bounds the retries of Lock (tests).
func withMaxRetries(n int) Option {
	return func(o *options) { o.maxRetries = n }
}

// withRedlockTiming sets a Redlock's per-node timeout and drift factor
// (tests); zero keeps a default.
func withRedlockTiming(nodeTimeout time.Duration, driftFactor float64) Option {
	return func(o *options) {
		o.client(func(c *clientOptions) { c.nodeTimeout, c.driftFactor = nodeTimeout, driftFactor })
	}
}

// newOptions applies opts to the defaults of a Client or Redlock.
func newOptions(opts []Option) options {
	o := options{c: &clientOptions{prefix: "lock:"}, backoff: defaultBackoff}
	for _, f := range opts {
		f(&o)
	}
	if o.c.now == nil {
		o.c.now = time.Now
	}
	return o
}

// callOptions applies the options of one call on top of the Client's
// backoff.
func callOptions(def backoff, opts []Option) options {
	if len(opts) == 0 {
		return options{backoff: def} // does not escape: no allocation
	}
	o := options{backoff: def}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// backoff is the capped exponential retry schedule of a waiting Lock.
type backoff struct{ min, max time.Duration }

var defaultBackoff = backoff{min: 2 * time.Millisecond, max: 128 * time.Millisecond}

func (b backoff) withDefaults() backoff {
	if b.min <= 0 {
		b.min = defaultBackoff.min
	}
	if b.max <= 0 {
		b.max = defaultBackoff.max
	}
	b.max = max(b.max, b.min)
	return b
}

// delay returns the jittered wait before retry n (0-based): uniform in
// [d/2, d] with d = min(max, min·2ⁿ), never overflowing.
func (b backoff) delay(n int) time.Duration {
	d := b.max
	if n < 63 {
		if x := b.min << max(n, 0); x>>max(n, 0) == b.min && x < d {
			d = x
		}
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

func validate(name string, ttl time.Duration) error {
	if name == "" {
		return ErrInvalidName
	}
	if ttl < time.Millisecond {
		return ErrInvalidTTL
	}
	return nil
}
