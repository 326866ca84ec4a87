package stock

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/rkey"
)

var (
	//go:embed lua/buy.lua
	buyLua string
	//go:embed lua/return.lua
	returnLua string
	//go:embed lua/configure.lua
	configureLua string
	//go:embed lua/rebuild.lua
	rebuildLua string

	buyScript       = redis.NewScript(queue.EnqueueLua + "\n" + buyLua)
	returnScript    = redis.NewScript(returnLua)
	configureScript = redis.NewScript(configureLua)
	rebuildScript   = redis.NewScript(rebuildLua)
	// KEYS[1] pause marker; ARGV[1] token. Deletes the marker if it is ours.
	unpauseScript = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
)

// StoreOptions configure a Store.
type StoreOptions struct {
	// Prefix of every key; default rkey.DefaultPrefix ("seckill:").
	Prefix string
	// Queue configures each SKU's order queue; its Prefix is set to Prefix.
	Queue queue.Options
	// RequestIDTTL is how long a request id is remembered; default 24h.
	RequestIDTTL time.Duration
	// MaxAttempts of an order task before it is dead-lettered; default 25.
	MaxAttempts int
	// Now is the clock; default time.Now.
	Now func() time.Time
	// PerUser limits each shopper's buy requests of one SKU that reach the
	// buy script; the zero value is no limit.
	PerUser Rate
}

// Rate is a request budget: PerSecond sustained, and Burst requests at once
// (at least PerSecond). It is kept per shopper per SKU inside the buy
// script, so it costs no round trip of its own and holds across instances.
// The instances' clocks should agree (NTP): a skew of d shifts a budget by d.
type Rate struct {
	PerSecond int
	Burst     int
}

// gcra returns the emission interval and burst allowance in microseconds,
// zero for no limit.
func (r Rate) gcra() (interval, burst int64) {
	if r.PerSecond <= 0 {
		return 0, 0
	}
	interval = max(int64(time.Second/time.Microsecond)/int64(r.PerSecond), 1)
	return interval, interval * int64(max(r.Burst, r.PerSecond, 1))
}

// Store is the Redis side of every SKU: units left, who bought how many,
// request ids, and the SKU's order queue. Its writes are Lua scripts, each
// touching the keys of one SKU (one hash tag).
type Store struct {
	rdb    redis.UniversalClient
	o      StoreOptions
	queues sync.Map // uint64 -> *queue.Queue
}

// NewStore returns a Store on rdb.
func NewStore(rdb redis.UniversalClient, o StoreOptions) *Store {
	if o.Prefix == "" {
		o.Prefix = rkey.DefaultPrefix
	}
	o.Queue.Prefix = o.Prefix
	if o.RequestIDTTL <= 0 {
		o.RequestIDTTL = 24 * time.Hour
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 25
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Queue.Now == nil {
		o.Queue.Now = o.Now
	}
	return &Store{rdb: rdb, o: o}
}

// Prefix is the key prefix.
func (s *Store) Prefix() string { return s.o.Prefix }

// Queue returns the order queue of sku: accepted orders wait there for the
// drain, and payment deadlines for their time. The queue is kept for the
// next call until Forget; use Lookup for a SKU named by a caller that may
// not exist.
func (s *Store) Queue(sku uint64) *queue.Queue {
	if q, ok := s.queues.Load(sku); ok {
		return q.(*queue.Queue)
	}
	actual, _ := s.queues.LoadOrStore(sku, s.newQueue(sku))
	return actual.(*queue.Queue)
}

// Lookup returns sku's queue for a read or a one-off write without keeping
// it: a request naming a made-up SKU costs no memory that outlives it.
func (s *Store) Lookup(sku uint64) *queue.Queue {
	if q, ok := s.queues.Load(sku); ok {
		return q.(*queue.Queue)
	}
	return s.newQueue(sku)
}

// Kept is the number of queues Queue keeps.
func (s *Store) Kept() int {
	n := 0
	s.queues.Range(func(any, any) bool { n++; return true })
	return n
}

// Forget drops the queue Queue kept for sku (its sale is over and drained).
func (s *Store) Forget(sku uint64) { s.queues.Delete(sku) }

func (s *Store) newQueue(sku uint64) *queue.Queue {
	q, _ := queue.New(s.rdb, Tag(sku), s.o.Queue) // the name is never empty
	return q
}

// RequestOrder returns the order id a shopper's request id got for sku, if
// Redis remembers it (for RequestIDTTL, and across a rebuild from SQL).
// lost reports that Redis has no state for sku at all (it lost its data and
// the SKU is not rebuilt yet): the request id may then be known to SQL only.
func (s *Store) RequestOrder(ctx context.Context, sku uint64, user, requestID string) (id string, ok, lost bool, err error) {
	k := newKeys(s.o.Prefix, sku)
	pipe := s.rdb.Pipeline()
	get := pipe.Get(ctx, k.requestID(user, requestID))
	exists := pipe.Exists(ctx, k.stock)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return "", false, false, fmt.Errorf("stock: request id of sku %d: %w", sku, err)
	}
	if id, err := get.Result(); err == nil {
		return id, true, false, nil
	}
	return "", false, exists.Val() == 0, nil
}

// Request is one shopper's buy request.
type Request struct {
	User       string
	Qty        int
	RequestID  string // optional: the same user and request id get the same order
	OrderID    string // the id the order gets if accepted
	PriceCents int64
	Created    time.Time
}

// Result is the answer to one Request: the order id (a new one, or the one
// an earlier request with the same request id got, with Replayed set), or
// Err: ErrSoldOut, ErrLimitExceeded or a *RateLimitedError.
type Result struct {
	OrderID  string
	Replayed bool
	Err      error
}

// Guard is the lock a batch is written under: the SKU lock's key, the token
// it was acquired with and its fencing number. The zero Guard means no lock
// (the atomic strategy).
type Guard struct {
	LockKey string
	Token   string
	Fence   int64
}

// Buy runs one script for a batch of requests for sku: for each, in order,
// it checks the request id, the units left and the user's limit, takes the
// units, and enqueues the order task — all or nothing per request, atomically
// for the batch. It returns the units left and one Result per request.
//
// Errors (nothing written): ErrStateLost when Redis has no state for sku,
// ErrStale when g's lock is no longer held or was overtaken, ErrBusy while
// the state is being rebuilt; otherwise Redis errors.
func (s *Store) Buy(ctx context.Context, sku uint64, reqs []Request, g Guard) (int64, []Result, error) {
	k := newKeys(s.o.Prefix, sku)
	q := s.Queue(sku)
	keys := make([]string, 0, 8+len(reqs))
	keys = append(keys, q.EnqueueKeys()...)
	lockKey := g.LockKey
	if lockKey == "" {
		lockKey = k.stock // never read without a token
	}
	keys = append(keys, k.stock, k.buyers, lockKey, k.paused)
	now := s.o.Now()
	interval, burst := s.o.PerUser.gcra()
	args := make([]any, 0, 9+6*len(reqs))
	args = append(args, g.Token, g.Fence, now.UnixMilli(), s.o.MaxAttempts, s.o.RequestIDTTL.Milliseconds(), TaskCreate, interval, burst, len(reqs))
	// The payloads of the batch share one buffer; each keeps its own slice.
	buf := make([]byte, 0, 128*len(reqs))
	for _, r := range reqs {
		ridIndex := 0
		if r.RequestID != "" {
			keys = append(keys, k.requestID(r.User, r.RequestID))
			ridIndex = len(keys)
		}
		rateIndex := 0
		if interval > 0 {
			keys = append(keys, k.rate(r.User))
			rateIndex = len(keys)
		}
		start := len(buf)
		buf = OrderTask{
			OrderID: r.OrderID, SKU: sku, User: r.User, Qty: r.Qty, PriceCents: r.PriceCents,
			CreatedMS: r.Created.UnixMilli(), RequestID: r.RequestID, Fence: g.Fence,
		}.appendJSON(buf)
		args = append(args, r.User, r.Qty, r.OrderID, ridIndex, rateIndex, buf[start:len(buf):len(buf)])
	}
	raw, err := buyScript.Run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		return 0, nil, fmt.Errorf("stock: buy sku %d: %w", sku, err)
	}
	if len(raw) < 2 {
		return 0, nil, fmt.Errorf("stock: buy sku %d: short reply %v", sku, raw)
	}
	status, left := toInt(raw[0]), toInt(raw[1])
	switch status {
	case 1:
	case -1:
		return 0, nil, fmt.Errorf("%w: sku %d", ErrStateLost, sku)
	case -2, -3:
		return 0, nil, fmt.Errorf("%w: sku %d", ErrStale, sku)
	case -4:
		return 0, nil, fmt.Errorf("%w: sku %d state is being rebuilt", ErrBusy, sku)
	case -5:
		return 0, nil, fmt.Errorf("stock: buy sku %d: order id already taken", sku)
	default:
		return 0, nil, fmt.Errorf("stock: buy sku %d: status %d", sku, status)
	}
	if len(raw) != 2+2*len(reqs) {
		return 0, nil, fmt.Errorf("stock: buy sku %d: %d replies for %d requests", sku, (len(raw)-2)/2, len(reqs))
	}
	results := make([]Result, len(reqs))
	for i := range reqs {
		code, id := toInt(raw[2+2*i]), raw[3+2*i]
		switch code {
		case 1:
			results[i].OrderID = id.(string)
		case 2:
			results[i] = Result{OrderID: id.(string), Replayed: true}
		case 3:
			results[i].Err = ErrSoldOut
		case 4:
			results[i].Err = ErrLimitExceeded
		case 5:
			results[i].Err = &RateLimitedError{RetryAfter: time.Duration(toInt(id)) * time.Microsecond}
		case 6:
			results[i].Err = ErrSaleEnded
		default:
			return 0, nil, fmt.Errorf("stock: buy sku %d: result code %d", sku, code)
		}
	}
	return left, results, nil
}

// ErrBelowTaken means a new total would leave fewer units than are already
// taken.
var ErrBelowTaken = errors.New("stock total below units already taken")

// Config is a SKU's sale as Redis needs it.
type Config struct {
	Total int64
	Limit int // per-user limit; 0 = none
	// Expires is when the SKU's state may go: its sale and payment window
	// are long over.
	Expires time.Time
	// Ends is when the sale ends: the buy script refuses buys from then on
	// (ErrSaleEnded), whatever an instance's cached window says. Zero: no
	// end is kept in Redis.
	Ends time.Time
}

// EndedEarly is the Ends of a sale an admin ended early: before any clock,
// so the buy script refuses every batch from then on, even one whose time
// was read on another instance just before the end was written.
var EndedEarly = time.UnixMilli(1)

// endsMs is Ends for the scripts, 0 when zero.
func (c Config) endsMs() int64 {
	if c.Ends.IsZero() {
		return 0
	}
	return c.Ends.UnixMilli()
}

// Configure sets sku's total and per-user limit in Redis. For a known SKU
// the units left move by the change of total, and ErrBelowTaken refuses a
// total lower than what buyers already took. A SKU Redis does not know is
// created with every unit left only when created says it is new in SQL too;
// otherwise Configure changes nothing and returns ErrStateLost (rebuild it
// from SQL). ErrBusy while a rebuild is in progress. It returns the units
// left.
func (s *Store) Configure(ctx context.Context, sku uint64, c Config, created bool) (int64, error) {
	k := newKeys(s.o.Prefix, sku)
	create := 0
	if created {
		create = 1
	}
	raw, err := configureScript.Run(ctx, s.rdb, []string{k.stock, k.paused}, c.Total, c.Limit, create, c.Expires.UnixMilli(), c.endsMs()).Slice()
	if err != nil {
		return 0, fmt.Errorf("stock: configure sku %d: %w", sku, err)
	}
	switch toInt(raw[0]) {
	case -1:
		return toInt(raw[1]), fmt.Errorf("%w: sku %d", ErrBelowTaken, sku)
	case -2:
		return 0, fmt.Errorf("%w: sku %d", ErrStateLost, sku)
	case -4:
		return 0, fmt.Errorf("%w: sku %d state is being rebuilt", ErrBusy, sku)
	}
	s.announce(ctx, sku)
	return toInt(raw[1]), nil
}

// State is what Redis holds for a SKU.
type State struct {
	Total, Left int64
	Limit       int
	Fence       int64
	Buyers      int64 // distinct users holding units
}

// Held returns the units user holds in each of skus (the buyers hash the
// buy script keeps: queued and persisted orders that are not closed), in one
// round trip; SKUs where the shopper holds none are left out.
func (s *Store) Held(ctx context.Context, user string, skus []uint64) (map[uint64]int64, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(skus))
	for i, sku := range skus {
		cmds[i] = pipe.HGet(ctx, newKeys(s.o.Prefix, sku).buyers, user)
	}
	if len(skus) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("stock: units held by %q: %w", user, err)
		}
	}
	held := map[uint64]int64{}
	for i, c := range cmds {
		if n, err := c.Int64(); err == nil && n > 0 {
			held[skus[i]] = n
		}
	}
	return held, nil
}

// State reads sku's Redis state; ok is false when Redis has none.
func (s *Store) State(ctx context.Context, sku uint64) (st State, ok bool, err error) {
	k := newKeys(s.o.Prefix, sku)
	pipe := s.rdb.Pipeline()
	h := pipe.HMGet(ctx, k.stock, "total", "left", "limit", "fence")
	b := pipe.HLen(ctx, k.buyers)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return st, false, fmt.Errorf("stock: state of sku %d: %w", sku, err)
	}
	v := h.Val()
	if len(v) < 4 || v[0] == nil {
		return st, false, nil
	}
	st.Total, st.Left, st.Limit, st.Fence = toInt(v[0]), toInt(v[1]), int(toInt(v[2])), toInt(v[3])
	st.Buyers = b.Val()
	return st, true, nil
}

// Pause keeps buyers of sku out (they get ErrBusy) for at most ttl while
// its state is rebuilt; it returns the token Rebuild needs, or ErrBusy when
// another rebuild holds the pause.
func (s *Store) Pause(ctx context.Context, sku uint64, ttl time.Duration) (string, error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	ok, err := s.rdb.SetNX(ctx, newKeys(s.o.Prefix, sku).paused, tok, ttl).Result()
	if err != nil {
		return "", fmt.Errorf("stock: pause sku %d: %w", sku, err)
	}
	if !ok {
		return "", fmt.Errorf("%w: sku %d is being rebuilt", ErrBusy, sku)
	}
	return tok, nil
}

// Unpause lifts the pause set with token without rebuilding (the rebuild
// failed).
func (s *Store) Unpause(ctx context.Context, sku uint64, token string) error {
	return unpauseScript.Run(ctx, s.rdb, []string{newKeys(s.o.Prefix, sku).paused}, token).Err()
}

// Rebuilt is a SKU's Redis state computed from SQL and its queue.
type Rebuilt struct {
	Config
	Left   int64
	Buyers map[string]int64 // units held per user
	// Returned are the orders SQL has closed: their units are free in Left,
	// so giving them back again must do nothing.
	Returned []string
	// Requests are the request ids of the SKU's orders, remembered again.
	Requests []Replay
}

// Replay is the order a shopper's request id got.
type Replay struct {
	User, RequestID, OrderID string
	Created                  time.Time
}

// Rebuild replaces sku's Redis state with r and lifts the pause set with
// token. It fails when the pause expired meanwhile (nothing is replaced).
func (s *Store) Rebuild(ctx context.Context, sku uint64, token string, r Rebuilt) error {
	k := newKeys(s.o.Prefix, sku)
	if err := s.rdb.Del(ctx, k.staging, k.retstage).Err(); err != nil {
		return fmt.Errorf("stock: rebuild sku %d: %w", sku, err)
	}
	const chunk = 1000
	fields := make([]any, 0, 2*chunk)
	for user, n := range r.Buyers {
		if n > 0 {
			fields = append(fields, user, n)
		}
	}
	ids := make([]any, 0, len(r.Returned))
	for _, id := range r.Returned {
		ids = append(ids, id)
	}
	now := s.o.Now()
	err := func() error {
		for i := 0; i < len(fields); i += 2 * chunk {
			if err := s.rdb.HSet(ctx, k.staging, fields[i:min(i+2*chunk, len(fields))]...).Err(); err != nil {
				return err
			}
		}
		for i := 0; i < len(ids); i += chunk {
			if err := s.rdb.SAdd(ctx, k.retstage, ids[i:min(i+chunk, len(ids))]...).Err(); err != nil {
				return err
			}
		}
		// No buy runs while paused, so no request id is being written.
		for i := 0; i < len(r.Requests); i += chunk {
			pipe := s.rdb.Pipeline()
			for _, q := range r.Requests[i:min(i+chunk, len(r.Requests))] {
				if ttl := q.Created.Add(s.o.RequestIDTTL).Sub(now); ttl > time.Millisecond {
					pipe.SetNX(ctx, k.requestID(q.User, q.RequestID), q.OrderID, ttl)
				}
			}
			if pipe.Len() == 0 {
				continue
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		return fmt.Errorf("stock: rebuild sku %d: %w", sku, err)
	}
	ok, err := rebuildScript.Run(ctx, s.rdb, []string{k.stock, k.buyers, k.staging, k.paused, k.returned, k.retstage},
		r.Total, r.Left, r.Limit, token, r.Expires.UnixMilli(), r.endsMs()).Int()
	if err != nil {
		return fmt.Errorf("stock: rebuild sku %d: %w", sku, err)
	}
	if ok != 1 {
		return fmt.Errorf("stock: rebuild sku %d: pause expired before the rebuild finished", sku)
	}
	s.announce(ctx, sku)
	return nil
}

// announce tells every instance that sku may have units again.
func (s *Store) announce(ctx context.Context, sku uint64) {
	_ = s.rdb.Publish(context.WithoutCancel(ctx), stockBackChannel(s.o.Prefix), strconv.FormatUint(sku, 10)).Err()
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	case nil:
		return 0
	default:
		n, _ := strconv.ParseInt(fmt.Sprint(x), 10, 64)
		return n
	}
}
