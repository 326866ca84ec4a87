package stock

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/replica"
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
	//go:embed lua/lend.lua
	lendLua string
	//go:embed lua/receive.lua
	receiveLua string

	buyScript       = redis.NewScript(queue.EnqueueLua + "\n" + buyLua)
	returnScript    = redis.NewScript(returnLua)
	configureScript = redis.NewScript(configureLua)
	rebuildScript   = redis.NewScript(rebuildLua)
	lendScript      = redis.NewScript(lendLua)
	receiveScript   = redis.NewScript(receiveLua)
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
	// Replicas, when it waits for replicas, holds a buy's answer and a
	// change of a sale until enough replicas have the write
	// (replica.ErrNotReplicated otherwise); nil waits for none.
	Replicas *replica.Waiter
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
	o.Prefix = cmp.Or(o.Prefix, rkey.DefaultPrefix)
	o.Queue.Prefix = o.Prefix
	o.RequestIDTTL = cmp.Or(o.RequestIDTTL, 24*time.Hour)
	o.MaxAttempts = cmp.Or(o.MaxAttempts, 25)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Queue.Now == nil {
		o.Queue.Now = o.Now
	}
	if o.Replicas == nil {
		o.Replicas = replica.New(rdb, 0, 0)
	}
	return &Store{rdb: rdb, o: o}
}

// Prefix is the key prefix.
func (s *Store) Prefix() string { return s.o.Prefix }

// Queue returns the order queue of part p of a SKU: accepted orders wait
// there for the drain, and payment deadlines for their time. The queue is
// kept for the next call until Forget; use Lookup for a SKU named by a
// caller that may not exist.
func (s *Store) Queue(p Part) *queue.Queue {
	if q, ok := s.queues.Load(p); ok {
		return q.(*queue.Queue)
	}
	actual, _ := s.queues.LoadOrStore(p, s.newQueue(p))
	return actual.(*queue.Queue)
}

// Lookup returns p's queue for a read or a one-off write without keeping
// it: a request naming a made-up SKU costs no memory that outlives it.
func (s *Store) Lookup(p Part) *queue.Queue {
	if q, ok := s.queues.Load(p); ok {
		return q.(*queue.Queue)
	}
	return s.newQueue(p)
}

// Kept is the number of queues Queue keeps.
func (s *Store) Kept() int {
	n := 0
	s.queues.Range(func(any, any) bool { n++; return true })
	return n
}

// Forget drops the queue Queue kept for p (its sale is over and drained).
func (s *Store) Forget(p Part) { s.queues.Delete(p) }

func (s *Store) newQueue(p Part) *queue.Queue {
	q, _ := queue.New(s.rdb, p.Tag(), s.o.Queue) // the name is never empty
	return q
}

// RequestOrder returns the order id a shopper's request id got in p (the
// shopper's home bucket), if Redis remembers it (for RequestIDTTL, and
// across a rebuild from SQL). lost reports that Redis has no state for p at
// all (it lost its data and the SKU is not rebuilt yet): the request id may
// then be known to SQL only.
func (s *Store) RequestOrder(ctx context.Context, p Part, user, requestID string) (id string, ok, lost bool, err error) {
	k := newKeys(s.o.Prefix, p)
	sku := p.SKU
	pipe := s.rdb.Pipeline()
	get := pipe.Get(ctx, k.requestID(user, requestID))
	exists := pipe.Exists(ctx, k.stock)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return "", false, false, fmt.Errorf("stock: request id of sku %d: %w", sku, err)
	}
	if id, err := get.Result(); err == nil {
		if err := s.confirmRequest(ctx, p, user, requestID); err != nil {
			return "", false, false, err
		}
		return id, true, false, nil
	}
	return "", false, exists.Val() == 0, nil
}

// Request is one shopper's buy request.
type Request struct {
	User       string
	Qty        int
	RequestID  string // optional: the same user and request id get the same order
	PriceCents int64
	Created    time.Time
	// Pass is the waiting room pass the buy spends with the units (the
	// SKU's room): the zero Pass when the SKU has no room.
	Pass Pass
}

// Pass is a waiting room pass, as its signature vouches for it: the
// ticket it admits and when it expires (its value among the room's valid
// passes).
type Pass struct {
	Ticket  string
	Expires time.Time
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

// Buy runs one script for a batch of requests for part p of a SKU (the
// requests' shoppers' home bucket): for each, in order,
// it checks the request id, the units left and the user's limit and takes
// the units — all or nothing per request — and it enqueues the accepted
// orders as one task, atomically for the batch. Each request's order id
// names the batch (internal/orderid). It returns the units left and one
// Result per request.
//
// Errors (nothing written): ErrStateLost when Redis has no state for sku,
// ErrStale when g's lock is no longer held or was overtaken, ErrBusy while
// the state is being rebuilt; otherwise Redis errors.
//
// An error after the script was sent, when it may have run, is an
// *UncertainError: OrderFor tells each request's order id, the one it got
// if the script ran and accepted it (see Outcome).
func (s *Store) Buy(ctx context.Context, p Part, reqs []Request, g Guard) (int64, []Result, error) {
	if len(reqs) > orderid.MaxBatch {
		return 0, nil, fmt.Errorf("stock: buy sku %d: %d requests in one batch", p.SKU, len(reqs))
	}
	now := s.o.Now()
	for tries := 1; ; tries++ {
		left, results, voidTo, err := s.buy(ctx, p, reqs, g, now)
		if voidTo == 0 || tries == 3 {
			return left, results, err
		}
		// A retry settled the outcome of a batch made at voidTo or later
		// than this one (Outcome): this one is made again, after it.
		now = time.UnixMilli(max(now.UnixMilli(), voidTo) + 1)
	}
}

// buy is one run of the buy script for a batch made at now; voidTo is not
// 0 when the script refused to run a batch made at or before it.
func (s *Store) buy(ctx context.Context, p Part, reqs []Request, g Guard, now time.Time) (left int64, results []Result, voidTo int64, err error) {
	k := newKeys(s.o.Prefix, p)
	q := s.Queue(p)
	sku := p.SKU
	keys := make([]string, 0, 8+len(reqs))
	keys = append(keys, q.EnqueueKeys()...)
	lockKey := g.LockKey
	if lockKey == "" {
		lockKey = k.stock // never read without a token
	}
	keys = append(keys, k.stock, k.buyers, lockKey, k.paused)
	interval, burst := s.o.PerUser.gcra()
	batch := orderid.NewBatch(sku, p.Bucket, now, len(reqs))
	args := make([]any, 0, 11+8*len(reqs))
	args = append(args, g.Token, g.Fence, now.UnixMilli(), s.o.MaxAttempts, s.o.RequestIDTTL.Milliseconds(), TaskCreate, interval, burst,
		batch.ID(), len(reqs), 0)
	// The orders of the batch share one buffer; each keeps its own slice.
	buf := make([]byte, 0, 128*len(reqs))
	passesIndex := 0 // the index in keys of the SKU's waiting room valid passes, once added
	for i, r := range reqs {
		oid := batch.Order(i)
		ridIndex := 0
		if r.RequestID != "" {
			keys = append(keys, k.requestID(r.User, r.RequestID))
			ridIndex = len(keys)
		}
		rateIndex := 0
		if interval > 0 { // charged unless a valid pass lets the buy in
			keys = append(keys, k.rate(r.User))
			rateIndex = len(keys)
		}
		passExp := int64(0)
		if r.Pass.Ticket != "" {
			if passesIndex == 0 { // one key for the batch: its requests are of one SKU
				keys = append(keys, RoomPrefix(s.o.Prefix, p.Room())+"valid")
				passesIndex = len(keys)
				args[10] = passesIndex
			}
			passExp = r.Pass.Expires.UnixMilli()
		}
		start := len(buf)
		buf = OrderTask{
			OrderID: oid, SKU: sku, User: r.User, Qty: r.Qty, PriceCents: r.PriceCents,
			CreatedMS: r.Created.UnixMilli(), RequestID: r.RequestID, Fence: g.Fence,
		}.appendJSON(buf)
		args = append(args, r.User, r.Qty, oid, ridIndex, rateIndex, buf[start:len(buf):len(buf)], passExp, r.Pass.Ticket)
	}
	cmd, err := s.o.Replicas.Run(ctx, buyScript, keys, args...)
	if err != nil {
		// Also when the script ran but too few replicas have it: the
		// batch's orders exist on the primary, and a retry returns each
		// once it is safe.
		return 0, nil, 0, &UncertainError{batch: batch, Err: fmt.Errorf("stock: buy sku %d: %w", sku, err)}
	}
	raw, err := cmd.Slice()
	if err != nil {
		return 0, nil, 0, &UncertainError{batch: batch, Err: fmt.Errorf("stock: buy sku %d: %w", sku, err)}
	}
	if len(raw) < 2 {
		return 0, nil, 0, fmt.Errorf("stock: buy sku %d: short reply %v", sku, raw)
	}
	status, left := toInt(raw[0]), toInt(raw[1])
	switch status {
	case 1:
	case -1:
		return 0, nil, 0, fmt.Errorf("%w: sku %d", ErrStateLost, sku)
	case -2, -3:
		return 0, nil, 0, fmt.Errorf("%w: sku %d", ErrStale, sku)
	case -4:
		return 0, nil, 0, fmt.Errorf("%w: sku %d state is being rebuilt", ErrBusy, sku)
	case -5:
		return 0, nil, 0, fmt.Errorf("stock: buy sku %d: batch id %s already taken", sku, batch.ID())
	case -6:
		return 0, nil, left, fmt.Errorf("%w: sku %d: batch made before a settled one", ErrBusy, sku)
	default:
		return 0, nil, 0, fmt.Errorf("stock: buy sku %d: status %d", sku, status)
	}
	if len(raw) != 2+2*len(reqs) {
		return 0, nil, 0, fmt.Errorf("stock: buy sku %d: %d replies for %d requests", sku, (len(raw)-2)/2, len(reqs))
	}
	results = make([]Result, len(reqs))
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
		case 7:
			results[i].Err = ErrPassSpent
		default:
			return 0, nil, 0, fmt.Errorf("stock: buy sku %d: result code %d", sku, code)
		}
	}
	s.confirmReplays(ctx, p, reqs, results)
	return left, results, 0, nil
}

// confirmReplays holds the answers that return an earlier request's order
// until enough replicas have that order, when the store waits for
// replicas: the script's own WAIT covers only what it wrote, and a batch
// that only replays wrote nothing.
func (s *Store) confirmReplays(ctx context.Context, p Part, reqs []Request, results []Result) {
	if s.o.Replicas.Replicas() == 0 {
		return
	}
	first := -1
	for i, r := range results {
		if r.Err == nil && !r.Replayed {
			return // a new order: the WAIT after the script covered the replays too
		}
		if r.Replayed && first < 0 {
			first = i
		}
	}
	if first < 0 {
		return
	}
	err := s.confirmRequest(ctx, p, reqs[first].User, reqs[first].RequestID)
	if err == nil {
		return
	}
	for i := range results {
		if results[i].Replayed {
			results[i] = Result{Err: err}
		}
	}
}

// confirmRequest waits until enough replicas hold the order user's request
// id got (see replica.Waiter.Confirm).
func (s *Store) confirmRequest(ctx context.Context, p Part, user, requestID string) error {
	if err := s.o.Replicas.Confirm(ctx, newKeys(s.o.Prefix, p).requestID(user, requestID), s.o.RequestIDTTL); err != nil {
		return fmt.Errorf("stock: request id of sku %d: %w", p.SKU, err)
	}
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
