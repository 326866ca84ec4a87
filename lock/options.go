package lock

import (
	"time"

	"github.com/seckill/seckill/internal/backoff"
)

// Backoff is the capped exponential retry schedule of a waiting Lock call:
// the n-th wait is drawn uniformly from [d/2, d] with d = min(Max, Min·2ⁿ).
// The jitter keeps waiters that failed together from retrying together. With
// pub/sub wake-up on (the default) the schedule is only the fallback for a
// missed release message.
type Backoff struct {
	Min time.Duration // first wait; default 2ms
	Max time.Duration // cap; default 128ms
}

// defaultBackoff fills the zero fields of a Backoff.
var defaultBackoff = Backoff{Min: 2 * time.Millisecond, Max: 128 * time.Millisecond}

func (b Backoff) withDefaults() Backoff {
	if b.Min <= 0 {
		b.Min = defaultBackoff.Min
	}
	if b.Max <= 0 {
		b.Max = defaultBackoff.Max
	}
	if b.Max < b.Min {
		b.Max = b.Min
	}
	return b
}

// delay returns the jittered wait before retry number attempt (0-based).
func (b Backoff) delay(attempt int) time.Duration {
	return backoff.Exponential{Min: b.Min, Max: b.Max}.Jittered(attempt)
}

// Option changes one acquisition call.
type Option func(*config)

type config struct {
	waitTimeout time.Duration
	maxRetries  int
	backoff     Backoff
	hasBackoff  bool
	watchdog    bool
	maxRenewals int
	fencing     bool
	noWakeup    bool
}

// WithWaitTimeout bounds how long Lock waits; when it passes Lock returns
// ErrWaitTimeout. Without it Lock waits until its context ends.
func WithWaitTimeout(d time.Duration) Option {
	return func(c *config) { c.waitTimeout = d }
}

// WithMaxRetries bounds the number of attempts Lock makes after the first
// one; when they are used up Lock returns ErrRetriesExhausted. 0 (the default)
// means no bound.
func WithMaxRetries(n int) Option {
	return func(c *config) { c.maxRetries = n }
}

// WithBackoff sets the retry schedule of this call instead of the Client's.
func WithBackoff(b Backoff) Option {
	return func(c *config) { c.backoff, c.hasBackoff = b, true }
}

// WithWatchdog renews the lock every ttl/3 while it is held, until Unlock.
// maxRenewals > 0 caps the number of renewals (the lock then expires ttl after
// the last one); 0 renews without a cap. A renewal that finds the lock gone, or
// renewals failing until the TTL has passed, mark the handle lost (see Done).
func WithWatchdog(maxRenewals int) Option {
	return func(c *config) { c.watchdog, c.maxRenewals = true, maxRenewals }
}

// WithFencing makes a Mutex acquisition also return a fencing token (Fence):
// an int64 that is strictly greater than that of every earlier acquisition of
// the same name. Acquire then runs a script (SET NX PX + INCR) instead of a
// plain SET. Ignored by Redlock, reentrant and read-write locks.
func WithFencing() Option {
	return func(c *config) { c.fencing = true }
}

// WithoutWakeup makes Lock wait by backoff only, without subscribing to the
// lock's release channel.
func WithoutWakeup() Option {
	return func(c *config) { c.noWakeup = true }
}

func newConfig(def Backoff, opts []Option) config {
	if len(opts) == 0 {
		return config{backoff: def} // does not escape: no allocation
	}
	cfg := config{backoff: def}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.hasBackoff {
		cfg.backoff = cfg.backoff.withDefaults()
	}
	return cfg
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
