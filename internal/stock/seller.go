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
	"github.com/seckill/seckill/lock"
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
// a shopper is told sold out only when the SKU as a whole had fewer units
// than asked for at one instant during the request.
func (s *Seller) Buy(ctx context.Context, l Layout, req Request) (Result, error) {
	if s.SoldOut(l.SKU) {
		return Result{}, ErrSoldOut
	}
	buckets := l.Buckets
	home := l.Home(req.User)
	if s.o.BatchMax <= 1 {
		res, err := s.execute(ctx, home, buckets, []Request{req}, nil)
		if err != nil {
			return Result{}, forRequest(err, 0)
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
	m     *lock.Lease
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
		m := (*lock.Lease)(nil)
		if l != nil {
			m = l.m
		}
		if m == nil {
			var err error
			m, err = s.locks.Lock(ctx, p.Tag(), s.o.LockTTL, lock.WithWait(s.o.LockWait), lock.WithFencing())
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

// borrowRounds bounds the rounds of moves and re-runs one batch makes
// before the requests still refused are answered ErrBusy; snapshotReads
// bounds the reads of one round's snapshot while the buckets keep
// changing.
const (
	borrowRounds  = 8
	snapshotReads = 4
)

// borrow serves the requests of a batch in p that were refused as sold out
// with units moved from the other buckets, changing their results in res.
// It returns how long the SKU is known sold out: SoldOutRecheck when, at
// one instant (Snapshot), no bucket had a unit left and none was moving
// between buckets; 0 otherwise.
//
// A request stays sold out only when the whole SKU had fewer units than it
// asks for at such an instant; then the SKU is not flagged unless it had
// none, so a buyer of fewer units is still served. Each round asks the
// other buckets in turn (Borrow); when that finds nothing, the snapshot
// says where the units are, and they are moved from there. Moves under way
// land in a moment and are waited for; moves their process left in flight
// are landed here (Settle). A request that the moves cannot serve within
// borrowRounds (other buckets' buyers took the units meanwhile) is
// answered ErrBusy: nothing was taken for it, and units may be left.
func (s *Seller) borrow(ctx context.Context, p Part, buckets int, reqs []Request, res []Result, g Guard) time.Duration {
	final := make([]bool, len(res)) // sold out for good: the SKU had fewer units
	pending := func() (idx []int, need int64) {
		for i, r := range res {
			if !final[i] && errors.Is(r.Err, ErrSoldOut) {
				idx = append(idx, i)
				need += int64(reqs[i].Qty)
			}
		}
		return idx, need
	}
	for round := 0; round < borrowRounds; round++ {
		idx, need := pending()
		if len(idx) == 0 {
			return 0
		}
		got, err := s.store.Borrow(ctx, p, buckets, need)
		if got == 0 && err == nil {
			var recheck time.Duration
			got, recheck, err = s.locate(ctx, p, buckets, reqs, idx, need, final, round)
			if recheck > 0 {
				return recheck
			}
		}
		if err != nil && got == 0 {
			s.o.Log.Warn("stock: moving units between buckets failed", "sku", p.SKU, "bucket", p.Bucket, "err", err.Error())
			s.busy(p.SKU, res, idx, err)
			return 0
		}
		if idx, _ = pending(); len(idx) == 0 {
			return 0
		}
		// Units may be in p now (moved, landed, or there all along for a
		// smaller request): run the requests again.
		if !s.rerun(ctx, p, reqs, res, idx, g) {
			return 0
		}
	}
	idx, _ := pending()
	s.busy(p.SKU, res, idx, errors.New("units are moving between buckets"))
	return 0
}

// locate finds the units of the SKU after a Borrow found none for the
// requests idx of a batch in p: from a snapshot, it marks final the
// requests for more than the SKU holds, and returns SoldOutRecheck when it
// holds none. Otherwise it moves units to p from the buckets the snapshot
// saw them in, or lands the moves under way, and returns the units p
// received.
func (s *Seller) locate(ctx context.Context, p Part, buckets int, reqs []Request, idx []int, need int64, final []bool, round int) (int64, time.Duration, error) {
	var sn Snap
	for range snapshotReads {
		var ok bool
		var err error
		if sn, ok, err = s.store.Snapshot(ctx, p.SKU, buckets); err != nil {
			return 0, 0, err
		} else if ok {
			break
		}
		sn = Snap{}
	}
	if sn.Left == nil {
		return 0, 0, nil // the buckets kept changing: try again
	}
	units := sn.Units()
	if units == 0 {
		return 0, s.o.SoldOutRecheck, nil
	}
	for _, i := range idx {
		final[i] = int64(reqs[i].Qty) > units
	}
	if sn.Moving > 0 {
		if round == 0 {
			time.Sleep(time.Millisecond) // let the moves under way land
			return 0, 0, nil
		}
		if _, err := s.store.Settle(ctx, p.SKU, buckets); err != nil {
			return 0, 0, err
		}
	}
	var got int64
	for b, left := range sn.Left {
		if b == p.Bucket || left == 0 || got >= need {
			continue
		}
		n, err := s.store.Move(ctx, Part{SKU: p.SKU, Bucket: b}, p, need-got)
		got += n
		if err != nil {
			return got, 0, err
		}
	}
	return got, 0, nil
}

// rerun runs the requests idx of a batch in p again, after units were moved
// to p, and puts their results in res. It reports whether it ran: when the
// script's outcome is unknown (a timeout, a write not on the replicas),
// those requests are answered with that error, never ErrBusy, since the
// script may have taken units and made orders for them.
func (s *Seller) rerun(ctx context.Context, p Part, reqs []Request, res []Result, idx []int, g Guard) bool {
	again := make([]Request, len(idx))
	for j, i := range idx {
		again[j] = reqs[i]
	}
	_, res2, err := s.store.Buy(ctx, p, again, g)
	if err != nil {
		// The batch's first run stands: its accepted orders are answered
		// as accepted.
		if nothingWritten(err) {
			s.busy(p.SKU, res, idx, err)
		} else {
			for j, i := range idx {
				res[i] = Result{Err: forRequest(err, j)}
			}
		}
		return false
	}
	for j, i := range idx {
		res[i] = res2[j]
	}
	return true
}

// nothingWritten reports whether a failed buy script is known to have
// written nothing: it refused to (paused, no state, a stale lock).
func nothingWritten(err error) bool {
	return errors.Is(err, ErrBusy) || errors.Is(err, ErrStateLost) || errors.Is(err, ErrStale)
}

// busy answers the requests idx of a batch ErrBusy because of err, for
// which nothing was written (a rebuild starts when err says Redis lost a
// bucket's state).
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
