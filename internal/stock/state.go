package stock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrBelowTaken means a new total would leave fewer units than are already
// taken.
var ErrBelowTaken = errors.New("stock total below units already taken")

// Config is a SKU's sale as Redis needs it.
type Config struct {
	Total int64
	Limit int // per-user limit; 0 = none
	// Buckets is how many parts the stock is split into, each under its
	// own hash tag (see Part); 0 or 1: one. Fixed when the SKU is created.
	Buckets int
	// Drop is the drop of a SKU of one (see Part), 0 for none.
	Drop uint64
	// Expires is when the SKU's state may go: its sale and payment window
	// are long over.
	Expires time.Time
	// Ends is when the sale ends: the buy script refuses buys from then on
	// (ErrSaleEnded), whatever an instance's cached window says. Zero: no
	// end is kept in Redis.
	Ends time.Time
	// LimitCountsCancelled keeps the units of a shopper's cancelled and
	// expired orders in their count against Limit (Return with
	// ReturnClosed): N per shopper means N ever taken, not N held at once.
	LimitCountsCancelled bool
}

// keep is LimitCountsCancelled for the scripts.
func (c Config) keep() int {
	if c.LimitCountsCancelled {
		return 1
	}
	return 0
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
// left (as Left counts them, for several buckets).
//
// A SKU of several buckets (c.Buckets) is created with the total spread
// evenly over them. A top-up goes to bucket 0, and a cut is taken from the
// units left of bucket after bucket; the buckets then lend each other what
// their shoppers need (Lend). A change of several buckets is not atomic:
// one that fails part-way has changed some buckets and not others, which
// can only leave fewer units on sale than SQL has (until the change is
// made again or the SKU is reconciled), never more. The change of each
// bucket is computed from the buckets' totals, so they must add up to the
// SKU's stock (sale rebuilds a SKU whose totals do not first).
func (s *Store) Configure(ctx context.Context, sku uint64, c Config, created bool) (int64, error) {
	l := Layout{SKU: sku, Buckets: c.Buckets, Drop: c.Drop}
	parts := l.Parts()
	if len(parts) == 1 {
		left, _, err := s.configure(ctx, parts[0], c, configSet, c.Total, created)
		return left, err
	}
	if created {
		var left int64
		n := int64(len(parts))
		for _, p := range parts {
			share := c.Total / n
			if int64(p.Bucket) < c.Total%n {
				share++
			}
			l, _, err := s.configure(ctx, p, c, configSet, share, true)
			if err != nil {
				return 0, err
			}
			left += l
		}
		return left, nil
	}
	st, ok, err := s.Sum(ctx, l)
	switch {
	case err != nil:
		return 0, err
	case !ok:
		return 0, fmt.Errorf("%w: sku %d", ErrStateLost, sku)
	}
	delta := c.Total - st.Total
	if delta >= 0 {
		for _, p := range parts {
			add := int64(0)
			if p.Bucket == 0 {
				add = delta
			}
			if _, _, err := s.configure(ctx, p, c, configAdd, add, false); err != nil {
				return 0, err
			}
		}
		return s.left(ctx, l)
	}
	want := -delta
	cut := make([]int64, len(parts))
	for i, p := range parts {
		_, n, err := s.configure(ctx, p, c, configCut, want, false)
		cut[i] = n
		if err != nil {
			return 0, errors.Join(err, s.giveBack(ctx, parts, c, cut))
		}
		want -= cut[i]
	}
	if want > 0 {
		if err := s.giveBack(ctx, parts, c, cut); err != nil {
			return 0, err
		}
		left, err := s.left(ctx, l)
		return left, errors.Join(err, fmt.Errorf("%w: sku %d", ErrBelowTaken, sku))
	}
	return s.left(ctx, l)
}

// left is Left of a SKU Configure just wrote: ErrStateLost when a bucket
// is gone (Redis lost its data meanwhile).
func (s *Store) left(ctx context.Context, l Layout) (int64, error) {
	left, ok, err := s.Left(ctx, l)
	if err == nil && !ok {
		err = fmt.Errorf("%w: sku %d", ErrStateLost, l.SKU)
	}
	return left, err
}

// configure modes: set the part's total, add units to it, or cut up to n
// of its units left.
const (
	configSet = "set"
	configAdd = "add"
	configCut = "cut"
)

// giveBack returns the units a failed cut took from each part.
func (s *Store) giveBack(ctx context.Context, parts []Part, c Config, cut []int64) error {
	var errs []error
	for i, p := range parts {
		if cut[i] > 0 {
			if _, _, err := s.configure(context.WithoutCancel(ctx), p, c, configAdd, cut[i], false); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// configure runs configure.lua on one part: mode with n units (see the
// script), and c's limit, end and expiry. It returns the part's units left
// and the units added or cut.
func (s *Store) configure(ctx context.Context, p Part, c Config, mode string, n int64, created bool) (left, applied int64, err error) {
	k := newKeys(s.o.Prefix, p)
	sku := p.SKU
	create := 0
	if created {
		create = 1
	}
	// A change an admin is told of is on the replicas first: a failover
	// must not bring back an ended sale or a total that was cut.
	cmd, err := s.o.Replicas.Run(ctx, configureScript, []string{k.stock, k.paused, k.buyers, k.returned, k.lent, k.received}, n, c.Limit, create, c.Expires.UnixMilli(), c.endsMs(), mode, c.keep())
	if err != nil {
		return 0, 0, fmt.Errorf("stock: configure sku %d: %w", sku, err)
	}
	raw, err := cmd.Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("stock: configure sku %d: %w", sku, err)
	}
	switch toInt(raw[0]) {
	case -1:
		return toInt(raw[1]), 0, fmt.Errorf("%w: sku %d", ErrBelowTaken, sku)
	case -2:
		return 0, 0, fmt.Errorf("%w: sku %d", ErrStateLost, sku)
	case -4:
		return 0, 0, fmt.Errorf("%w: sku %d state is being rebuilt", ErrBusy, sku)
	}
	s.announce(ctx, sku)
	if len(raw) > 2 {
		applied = toInt(raw[2])
	}
	return toInt(raw[1]), applied, nil
}

// State is what Redis holds for a SKU, or for one part of it.
type State struct {
	Total, Left int64
	Limit       int
	Fence       int64
	Buyers      int64 // distinct users holding units
	// Moved is the units a part received from the other buckets less the
	// units it lent them. Over a whole SKU it is minus the units lent and
	// not yet received (in flight).
	Moved int64
}

// Taken is the units buyers hold: the total and what was moved in, less
// what is left.
func (st State) Taken() int64 { return st.Total + st.Moved - st.Left }

// Held returns the units user holds in each of homes (the user's home
// bucket of each SKU: the buyers hash the buy script keeps, of queued and
// persisted orders that are not closed), in one round trip, by SKU; SKUs
// where the shopper holds none are left out.
func (s *Store) Held(ctx context.Context, user string, homes []Part) (map[uint64]int64, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(homes))
	for i, p := range homes {
		cmds[i] = pipe.HGet(ctx, newKeys(s.o.Prefix, p).buyers, user)
	}
	if len(homes) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("stock: units held by %q: %w", user, err)
		}
	}
	held := map[uint64]int64{}
	for i, c := range cmds {
		if n, err := c.Int64(); err == nil && n > 0 {
			held[homes[i].SKU] = n
		}
	}
	return held, nil
}

// State reads part p's Redis state; ok is false when Redis has none.
func (s *Store) State(ctx context.Context, p Part) (st State, ok bool, err error) {
	sts, oks, err := s.States(ctx, []Part{p})
	if err != nil {
		return st, false, err
	}
	return sts[0], oks[0], nil
}

// States reads the Redis state of each of parts in one round trip (one per
// Cluster node); ok[i] is false when Redis has none for parts[i].
func (s *Store) States(ctx context.Context, parts []Part) ([]State, []bool, error) {
	pipe := s.rdb.Pipeline()
	hs := make([]*redis.SliceCmd, len(parts))
	bs := make([]*redis.IntCmd, len(parts))
	for i, p := range parts {
		k := newKeys(s.o.Prefix, p)
		hs[i] = pipe.HMGet(ctx, k.stock, "total", "left", "limit", "fence", "moved")
		bs[i] = pipe.HLen(ctx, k.buyers)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, fmt.Errorf("stock: state of sku %d: %w", parts[0].SKU, err)
	}
	sts, oks := make([]State, len(parts)), make([]bool, len(parts))
	for i := range parts {
		v := hs[i].Val()
		if len(v) < 5 || v[0] == nil {
			continue
		}
		sts[i] = State{Total: toInt(v[0]), Left: toInt(v[1]), Limit: int(toInt(v[2])), Fence: toInt(v[3]),
			Moved: toInt(v[4]), Buyers: bs[i].Val()}
		oks[i] = true
	}
	return sts, oks, nil
}

// Sum reads the state of every part of a SKU laid out as l and adds them
// up; ok is false when Redis has no state for one of them.
func (s *Store) Sum(ctx context.Context, l Layout) (st State, ok bool, err error) {
	sts, oks, err := s.States(ctx, l.Parts())
	if err != nil {
		return st, false, err
	}
	ok = true
	for i, p := range sts {
		ok = ok && oks[i]
		st.Total += p.Total
		st.Left += p.Left
		st.Moved += p.Moved
		st.Buyers += p.Buyers
		st.Limit = max(st.Limit, p.Limit)
		st.Fence = max(st.Fence, p.Fence)
	}
	return st, ok, nil
}

// Pause keeps buyers of every part of parts out (they get ErrBusy), and
// keeps units from moving between them, for at most ttl while their state
// is rebuilt; it returns the token Rebuild needs, or ErrBusy when another
// rebuild holds the pause of one of them (then none is paused).
func (s *Store) Pause(ctx context.Context, parts []Part, ttl time.Duration) (string, error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	for i, p := range parts {
		ok, err := s.rdb.SetNX(ctx, newKeys(s.o.Prefix, p).paused, tok, ttl).Result()
		if err == nil && !ok {
			err = fmt.Errorf("%w: sku %d is being rebuilt", ErrBusy, p.SKU)
		} else if err != nil {
			err = fmt.Errorf("stock: pause sku %d: %w", p.SKU, err)
		}
		if err != nil {
			// The part that failed may be paused all the same (a write
			// whose answer a timeout lost): it is unpaused too, which the
			// token makes safe, or it would refuse buyers and rebuilds
			// until its pause expired.
			return "", errors.Join(err, s.unpauseRetrying(context.WithoutCancel(ctx), parts[:i+1], tok))
		}
	}
	return tok, nil
}

// unpauseRetrying is Unpause, tried again a few times over about a second
// for the parts whose Redis did not answer.
func (s *Store) unpauseRetrying(ctx context.Context, parts []Part, token string) error {
	var err error
	for attempt := 0; attempt < 5 && len(parts) > 0; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
		}
		var failed []Part
		var errs []error
		for _, p := range parts {
			if e := s.Unpause(ctx, []Part{p}, token); e != nil {
				failed, errs = append(failed, p), append(errs, e)
			}
		}
		parts, err = failed, errors.Join(errs...)
	}
	return err
}

// Unpause lifts the pause of parts set with token without rebuilding (the
// rebuild failed).
func (s *Store) Unpause(ctx context.Context, parts []Part, token string) error {
	var errs []error
	for _, p := range parts {
		errs = append(errs, unpauseScript.Run(ctx, s.rdb, []string{newKeys(s.o.Prefix, p).paused}, token).Err())
	}
	return errors.Join(errs...)
}

// Rebuilt is a SKU's Redis state computed from SQL and its queue.
type Rebuilt struct {
	Config
	Left int64
	// Buyers are each user's count against the limit: the units they hold,
	// and those of their closed orders when the limit counts them
	// (LimitCountsCancelled).
	Buyers map[string]int64
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

// Rebuild replaces part p's Redis state with r and lifts p's pause set
// with token. It fails when the pause expired meanwhile (nothing is
// replaced). Units lent to or by p and not settled are forgotten (r
// counts every order, so they are on sale again), and a transfer begun
// before cannot be received after: the token becomes p's epoch.
func (s *Store) Rebuild(ctx context.Context, p Part, token string, r Rebuilt) error {
	k := newKeys(s.o.Prefix, p)
	sku := p.SKU
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
	ok, err := rebuildScript.Run(ctx, s.rdb, []string{k.stock, k.buyers, k.staging, k.paused, k.returned, k.retstage, k.lent, k.received},
		r.Total, r.Left, r.Limit, token, r.Expires.UnixMilli(), r.endsMs(), r.keep()).Int()
	if err != nil {
		return fmt.Errorf("stock: rebuild sku %d: %w", sku, err)
	}
	if ok != 1 {
		// Another rebuild holds the SKU now and will finish it: busy, as
		// for a rebuild under way, not an internal error.
		return fmt.Errorf("%w: sku %d: the rebuild's pause expired and another rebuild took over", ErrBusy, sku)
	}
	s.announce(ctx, sku)
	return nil
}
