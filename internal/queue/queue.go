package queue

import (
	"cmp"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/internal/replica"
)

// Errors returned by the queue. Validation errors come back before anything
// is sent to Redis; Redis and context errors are returned wrapped as they are.
var (
	// ErrEmptyName: New was given an empty queue name.
	ErrEmptyName = errors.New("queue: empty queue name")
	// ErrEmptyID: a task without an id.
	ErrEmptyID = errors.New("queue: empty task id")
	// ErrEmptyType: a task without a type.
	ErrEmptyType = errors.New("queue: empty task type")
	// ErrPayloadTooLarge: the payload exceeds Options.MaxPayload.
	ErrPayloadTooLarge = errors.New("queue: payload too large")
	// ErrDelayTooLong: the due time is further ahead than Options.MaxDelay.
	ErrDelayTooLong = errors.New("queue: due time beyond the maximum delay")
	// ErrBadAttempts: a negative Task.MaxAttempts.
	ErrBadAttempts = errors.New("queue: max attempts must not be negative")
	// ErrStaleToken: ack, nack, release or extend with a token that no longer
	// owns the task (its lease expired and it was recovered, or it was already
	// acked). The task is left untouched.
	ErrStaleToken = errors.New("queue: stale claim token")
	// ErrNotFound: no task (or no dead letter, for the dead-letter calls) with this id.
	ErrNotFound = errors.New("queue: task not found")
	// ErrInFlight: Cancel of a task a consumer holds; ack or nack it instead.
	ErrInFlight = errors.New("queue: task is in flight")
	// ErrRelease, returned (or wrapped) by a handler for a task, hands the task
	// back to the queue without counting the attempt, as on shutdown.
	ErrRelease = errors.New("queue: task released")
)

// Limits that keep every script short however large the queue grows.
const (
	// MaxClaim caps the tasks one Claim moves (larger n is cut to it).
	MaxClaim = 500
	// enqueueChunk is the number of tasks per enqueue script call; a batch is
	// sent as one pipeline of such calls.
	enqueueChunk = 256
	// MaxList caps the tasks one Peek, List or ListDead returns (read-only
	// scripts, about a millisecond for a full page). A shorter page than
	// asked for means the end was reached.
	MaxList = 1000
)

// Defaults for Options fields left zero.
const (
	DefaultMaxAttempts  = 10
	DefaultMaxPayload   = 1 << 20
	DefaultMaxDelay     = 30 * 24 * time.Hour
	DefaultRecoverBatch = 500
)

// Options configure a Queue. The zero value is usable.
type Options struct {
	// Prefix of every key; default DefaultPrefix ("seckill:").
	Prefix string
	// Now is the clock; scripts get the time from it, so delays have
	// millisecond precision and tests can move time. Default time.Now.
	Now func() time.Time
	// MaxAttempts for tasks that do not set their own; default 10.
	MaxAttempts int
	// MaxPayload is the largest payload accepted, in bytes; default 1 MiB.
	MaxPayload int
	// MaxDelay is how far ahead a task may be due; default 30 days.
	MaxDelay time.Duration
	// DeadCap is the most dead letters kept; 0 keeps all of them until an
	// operator acts. When a cap trims letters their ids are logged at Warn
	// level and counted in the dead_trimmed_total metric.
	DeadCap int
	// RecoverBatch is the most expired leases one call returns to ready
	// (every Claim and Recover does one such bounded sweep); default 500.
	RecoverBatch int
	// Backoff gives the delay before retry number attempt (1 after the first
	// failure); default DefaultBackoff.
	Backoff func(attempt int) time.Duration
	// Metrics receives counters; nil turns metrics off.
	Metrics *Metrics
	// Logger for trimmed dead letters and consumer errors; default slog.Default().
	Logger *slog.Logger
	// Replicas, when it waits for replicas, makes Claim hand out tasks only
	// once its claim — and so every write before it, the enqueue among
	// them — is on enough replicas: a consumer never acts on a task a
	// failover could make the queue forget. Default: no wait.
	Replicas *replica.Waiter
}

// Queue is one named reliable queue in Redis. It is safe for concurrent use.
type Queue struct {
	c    redis.UniversalClient
	name string
	k    keys
	o    Options

	coalesce coalescer
}

// New returns the queue called name (for example "orders" or "{sku:42}";
// a name that carries a hash tag keeps it). It fails only with ErrEmptyName.
func New(c redis.UniversalClient, name string, opts Options) (*Queue, error) {
	if name == "" {
		return nil, ErrEmptyName
	}
	opts.Prefix = cmp.Or(opts.Prefix, DefaultPrefix)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	orDefault(&opts.MaxAttempts, DefaultMaxAttempts)
	orDefault(&opts.MaxPayload, DefaultMaxPayload)
	orDefault(&opts.MaxDelay, DefaultMaxDelay)
	orDefault(&opts.RecoverBatch, DefaultRecoverBatch)
	if opts.Backoff == nil {
		opts.Backoff = DefaultBackoff
	}
	opts.Logger = cmp.Or(opts.Logger, slog.Default())
	if opts.Replicas == nil {
		opts.Replicas = replica.New(c, 0, 0)
	}
	return &Queue{c: c, name: name, k: newKeys(opts.Prefix, name), o: opts}, nil
}

// orDefault replaces a zero or negative *v with def.
func orDefault[T ~int | ~int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Name is the queue's name as given to New.
func (q *Queue) Name() string { return q.name }

// DefaultBackoff doubles from one second (1s, 2s, 4s ... capped at ten
// minutes) and draws the delay uniformly from the upper half of that window,
// so retries of tasks that failed together spread out.
func DefaultBackoff(attempt int) time.Duration {
	return defaultBackoff.Jittered(attempt - 1)
}

var defaultBackoff = backoff.Exponential{Min: time.Second, Max: 10 * time.Minute}

// Task is a unit of work to enqueue.
type Task struct {
	// ID identifies the task within the queue; enqueueing an id that is
	// still pending, in flight or dead is a no-op. Required.
	ID string
	// Type tells the handler what to do. Required.
	Type string
	// Payload is opaque to the queue; at most Options.MaxPayload bytes.
	Payload []byte
	// Due is when the task may run, to the millisecond. Zero or past: now.
	// More than Options.MaxDelay ahead: ErrDelayTooLong.
	Due time.Time
	// MaxAttempts before the task becomes a dead letter; 0: Options.MaxAttempts.
	MaxAttempts int
}

// Claimed is a task a consumer holds until its lease runs out.
type Claimed struct {
	Task
	// Attempt is 1 on the first delivery and counts every claim since,
	// including claims whose lease expired without an ack.
	Attempt int
	// Token proves ownership to Ack, Nack, Release and Extend.
	Token string
	// LeaseUntil is when the task returns to the queue unless acked or extended.
	LeaseUntil time.Time
	// EnqueuedAt is when the task was first enqueued.
	EnqueuedAt time.Time
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v) }

// scoreMS parses a sorted-set score (milliseconds) as Redis prints it.
func scoreMS(s string) int64 {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v
	}
	f, _ := strconv.ParseFloat(s, 64)
	return int64(math.Round(f))
}
