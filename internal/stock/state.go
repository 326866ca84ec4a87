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
	// A change an admin is told of is on the replicas first: a failover
	// must not bring back an ended sale or a total that was cut.
	cmd, err := s.o.Replicas.Run(ctx, configureScript, []string{k.stock, k.paused}, c.Total, c.Limit, create, c.Expires.UnixMilli(), c.endsMs())
	if err != nil {
		return 0, fmt.Errorf("stock: configure sku %d: %w", sku, err)
	}
	raw, err := cmd.Slice()
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
