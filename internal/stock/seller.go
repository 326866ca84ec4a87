package stock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/fanout"
	"github.com/seckill/seckill/internal/lock"
)

// Strategies.
const (
	// StrategyLock takes the SKU's Redis lock around the buy script, and the
	// script checks that the lock is still held and its fencing number is
	// not stale before it writes.
	StrategyLock = "lock"
	// StrategyAtomic runs the buy script alone: it is atomic by itself.
	StrategyAtomic = "atomic"
)

// SellerOptions configure a Seller.
type SellerOptions struct {
	Strategy string        // StrategyLock (default) or StrategyAtomic
	LockTTL  time.Duration // lifetime of the SKU lock; default 2s
	LockWait time.Duration // longest wait for the lock before ErrBusy; default 100ms
	// LockHold is how long a combining line may keep the SKU lock across
	// consecutive batches while requests keep arriving, saving an acquire
	// and a release per batch; another instance's line waits at most about
	// this long for its turn. Default 10ms; negative releases after every
	// batch.
	LockHold time.Duration
	// BatchMax is the most concurrent requests for one SKU combined into one
	// lock acquisition and one script; 1 turns combining off. Default 64.
	BatchMax int
	// BatchWait is the longest a batch waits for more requests to join it,
	// and only while requests keep arriving together; default 200µs.
	BatchWait time.Duration
	// SoldOutRecheck is how long a SKU seen sold out is refused without
	// asking Redis, unless stock comes back earlier; default 1s.
	SoldOutRecheck time.Duration
	// LineIdle is how long a SKU's combining line waits for a request
	// before it stops (the next request starts a new one); default 1m.
	LineIdle time.Duration
	// OnStateLost is called (in its own goroutine) when Redis has no state
	// for a SKU, to rebuild it from SQL.
	OnStateLost func(sku uint64)
	Log         *slog.Logger
}

// Seller runs the buy path of every SKU: the per-process sold-out flag, the
// combining of concurrent requests, the SKU lock and the buy script.
type Seller struct {
	store *Store
	locks *lock.Client
	o     SellerOptions

	soldOut sync.Map // uint64 -> *atomic.Int64: Unix nanos until which the SKU is known sold out
	lines   sync.Map // Part -> *line
	rebuild sync.Map // uint64 -> struct{}: rebuilds in progress

	done chan struct{}
	wg   sync.WaitGroup
	sub  *fanout.Hub
}

// NewSeller returns a Seller. It subscribes to the stock-back channel so a
// sold-out flag clears on every instance as soon as units come back; Close
// stops it.
func NewSeller(ctx context.Context, rdb redis.UniversalClient, store *Store, locks *lock.Client, o SellerOptions) *Seller {
	o.Strategy = cmp.Or(o.Strategy, StrategyLock)
	o.LockTTL = cmp.Or(o.LockTTL, 2*time.Second)
	o.LockWait = cmp.Or(o.LockWait, 100*time.Millisecond)
	if o.LockHold == 0 {
		o.LockHold = 10 * time.Millisecond
	}
	o.BatchMax = cmp.Or(o.BatchMax, 64)
	if o.BatchWait < 0 {
		o.BatchWait = 0
	}
	o.SoldOutRecheck = cmp.Or(o.SoldOutRecheck, time.Second)
	o.LineIdle = cmp.Or(o.LineIdle, time.Minute)
	o.Log = cmp.Or(o.Log, slog.Default())
	s := &Seller{store: store, locks: locks, o: o, done: make(chan struct{}), sub: fanout.New(rdb, fanout.Options{})}
	// A failed SUBSCRIBE is retried by go-redis when it reconnects; until
	// then a sold-out flag lasts its SoldOutRecheck.
	_, _ = s.sub.Listen(ctx, stockBackChannel(store.Prefix()), func(payload string) {
		if id, err := strconv.ParseUint(payload, 10, 64); err == nil {
			s.clearSoldOut(id)
		}
	})
	return s
}

// Close stops the combiners (queued requests get ErrClosed) and the
// subscription, and waits for them.
func (s *Seller) Close() {
	close(s.done)
	_ = s.sub.Close()
	s.wg.Wait()
}

// SoldOut reports whether sku is known sold out in this process.
func (s *Seller) SoldOut(sku uint64) bool {
	v, ok := s.soldOut.Load(sku)
	return ok && time.Now().UnixNano() < v.(*atomic.Int64).Load()
}

// markSoldOut refuses sku without a Redis call for d, unless stock comes
// back earlier.
func (s *Seller) markSoldOut(sku uint64, d time.Duration) {
	v, _ := s.soldOut.LoadOrStore(sku, new(atomic.Int64))
	v.(*atomic.Int64).Store(time.Now().Add(d).UnixNano())
}

// movingRecheck is how long a SKU split into buckets is refused without a
// Redis call when it has no units left to lend but some moving between
// buckets: such a move lands in milliseconds, and one that never lands (its
// process died) must not keep every sold-out answer going to Redis.
const movingRecheck = 100 * time.Millisecond

// Lines is the number of SKUs with a combining line running.
func (s *Seller) Lines() int {
	n := 0
	s.lines.Range(func(any, any) bool { n++; return true })
	return n
}

func (s *Seller) clearSoldOut(sku uint64) {
	if v, ok := s.soldOut.Load(sku); ok {
		v.(*atomic.Int64).Store(0)
	}
}

// Buy takes req.Qty units of sku (its stock split into buckets) for
// req.User and enqueues the order, or says why not: ErrSoldOut,
// ErrLimitExceeded, ErrBusy (lock not obtained in time, or state being
// rebuilt), ErrStateLost (Redis lost the SKU; a rebuild has started),
// ErrClosed, or a Redis error. A SKU known sold out is refused without a
// Redis call.
//
// The shopper always buys from their home bucket (Home); when it has too
// few units left, units are moved to it from the other buckets (Borrow), so
// a shopper is told sold out only when no bucket has any left.
func (s *Seller) Buy(ctx context.Context, sku uint64, buckets int, req Request) (Result, error) {
	if s.SoldOut(sku) {
		return Result{}, ErrSoldOut
	}
	home := Home(sku, buckets, req.User)
	if s.o.BatchMax <= 1 {
		res, err := s.execute(ctx, home, buckets, []Request{req}, nil)
		if err != nil {
			return Result{}, err
		}
		return res[0], res[0].Err
	}
	p := &pending{req: req, reply: make(chan reply, 1)}
	if err := s.enqueue(ctx, home, buckets, p); err != nil {
		return Result{}, err
	}
	// Once queued the request is answered: its batch runs with its own
	// deadline, and an accepted order must be reported even to a caller
	// that stopped waiting.
	var r reply
	select {
	case r = <-p.reply:
	case <-s.done:
		// The line answers what it took before it stopped; anything sent
		// after that is not taken.
		select {
		case r = <-p.reply:
		case <-time.After(s.o.LockWait + 6*time.Second):
			return Result{}, ErrClosed
		}
	}
	if r.err != nil {
		return Result{}, r.err
	}
	return r.res, r.res.Err
}

// lease is the SKU lock a combining line keeps across batches (StrategyLock).
type lease struct {
	m     *lock.Mutex
	since time.Time
}

// release unlocks a kept lock.
func (l *lease) release() {
	if l == nil || l.m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_ = l.m.Unlock(ctx)
	cancel()
	l.m = nil
}

// execute runs one batch in part p of a SKU of buckets: lock (for
// StrategyLock), script, unlock. With a lease, the lock it holds is used,
// or the one acquired is kept in it (the caller releases it); without, the
// lock is released at once.
func (s *Seller) execute(ctx context.Context, p Part, buckets int, reqs []Request, l *lease) ([]Result, error) {
	sku := p.SKU
	var g Guard
	if s.o.Strategy == StrategyLock {
		m := (*lock.Mutex)(nil)
		if l != nil {
			m = l.m
		}
		if m == nil {
			var err error
			m, err = s.locks.Lock(ctx, p.Tag(), s.o.LockTTL, lock.WithWaitTimeout(s.o.LockWait), lock.WithFencing())
			if err != nil {
				if errors.Is(err, lock.ErrNotObtained) {
					return nil, fmt.Errorf("%w: %w", ErrBusy, err)
				}
				return nil, fmt.Errorf("stock: lock sku %d: %w", sku, err)
			}
			if l == nil {
				defer func() { _ = m.Unlock(context.WithoutCancel(ctx)) }()
			} else {
				l.m, l.since = m, time.Now()
			}
		}
		g = Guard{LockKey: m.Key(), Token: m.Token(), Fence: m.Fence()}
	}
	left, res, err := s.store.Buy(ctx, p, reqs, g)
	var recheck time.Duration // how long the SKU is known sold out
	switch {
	case err != nil:
	case buckets > 1:
		// The bucket's own left says nothing of the others'.
		recheck = s.borrow(ctx, p, buckets, reqs, res, g)
	case left <= 0:
		recheck = s.o.SoldOutRecheck
	}
	if err != nil {
		// Lost, overtaken or unknown: take the lock afresh next time.
		l.release()
	}
	switch {
	case errors.Is(err, ErrStateLost):
		s.stateLost(sku)
		return nil, err
	case err != nil:
		return nil, err
	}
	if recheck > 0 {
		s.markSoldOut(sku, recheck)
	}
	return res, nil
}

// borrow serves the requests of a batch in p that were refused as sold out
// with units moved from the other buckets, changing their results in res.
// It returns how long the SKU is known sold out: SoldOutRecheck when no
// other bucket had units to lend or moving, movingRecheck when none had
// units to lend but some are moving, 0 when it is not known sold out. A
// failure to move units answers those requests ErrBusy: units may be left.
func (s *Seller) borrow(ctx context.Context, p Part, buckets int, reqs []Request, res []Result, g Guard) time.Duration {
	for range 3 {
		var idx []int
		var need int64
		for i, r := range res {
			if errors.Is(r.Err, ErrSoldOut) {
				idx = append(idx, i)
				need += int64(reqs[i].Qty)
			}
		}
		if len(idx) == 0 {
			return 0
		}
		got, moving, err := s.store.Borrow(ctx, p, buckets, need)
		if err != nil {
			s.o.Log.Warn("stock: moving units between buckets failed", "sku", p.SKU, "bucket", p.Bucket, "err", err.Error())
			s.busy(p.SKU, res, idx, err)
			return 0
		}
		if got == 0 && moving {
			// Units are on their way to a bucket: not sold out for long.
			return min(movingRecheck, s.o.SoldOutRecheck)
		}
		if got == 0 {
			return s.o.SoldOutRecheck
		}
		again := make([]Request, len(idx))
		for j, i := range idx {
			again[j] = reqs[i]
		}
		_, res2, err := s.store.Buy(ctx, p, again, g)
		if err != nil {
			// The batch's first run stands: its accepted orders are
			// answered as accepted.
			s.busy(p.SKU, res, idx, err)
			return 0
		}
		for j, i := range idx {
			res[i] = res2[j]
		}
	}
	return 0
}

// busy answers the requests idx of a batch ErrBusy because of err (a
// rebuild starts when err says Redis lost a bucket's state).
func (s *Seller) busy(sku uint64, res []Result, idx []int, err error) {
	if errors.Is(err, ErrStateLost) {
		s.stateLost(sku)
	}
	for _, i := range idx {
		res[i] = Result{Err: fmt.Errorf("%w: %w", ErrBusy, err)}
	}
}

func (s *Seller) stateLost(sku uint64) {
	if s.o.OnStateLost == nil {
		return
	}
	if _, running := s.rebuild.LoadOrStore(sku, struct{}{}); running {
		return
	}
	s.wg.Go(func() {
		defer s.rebuild.Delete(sku)
		s.o.OnStateLost(sku)
	})
}
