package stock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Borrow moves units left from the other buckets of p's SKU (of buckets)
// into p until p has received at least need, or every other bucket was
// asked, and returns the units p received. Each move is two steps,
// lend.lua on the lending bucket and receive.lua on p (see those scripts),
// and when the store waits for replicas each step is on them before the
// next: units never appear in p while the lend that took them out of the
// lender could still be undone by a failover of the lender's shard.
//
// Borrow asks the buckets one after the other, so a move between two
// others can hide units from it: 0 units says nothing of the SKU as a
// whole (Snapshot does). On an error the units received so far are in p.
func (s *Store) Borrow(ctx context.Context, p Part, buckets int, need int64) (got int64, err error) {
	for i := 1; i < buckets && got < need; i++ {
		from := Part{SKU: p.SKU, Bucket: (p.Bucket + i) % buckets}
		n, err := s.move(ctx, from, p, need-got)
		got += n
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

// Move lends up to want units (or more: see lend.lua) from one bucket of a
// SKU to another and returns how many arrived, as Borrow does for each
// bucket it asks.
func (s *Store) Move(ctx context.Context, from, to Part, want int64) (int64, error) {
	return s.move(ctx, from, to, want)
}

// move is Move.
func (s *Store) move(ctx context.Context, from, to Part, want int64) (int64, error) {
	var b [9]byte
	_, _ = rand.Read(b[:])
	id := strconv.Itoa(from.Bucket) + ">" + strconv.Itoa(to.Bucket) + ":" + hex.EncodeToString(b[:])
	fk := newKeys(s.o.Prefix, from)
	cmd, err := s.o.Replicas.Run(ctx, lendScript, []string{fk.stock, fk.paused, fk.lent}, id, want, to.Bucket)
	if err != nil {
		// Not lent, or lent and not (yet) on the replicas: then the move
		// waits in the lender's lent hash until Settle finds it there.
		return 0, fmt.Errorf("stock: lend from sku %d bucket %d: %w", from.SKU, from.Bucket, err)
	}
	raw, err := cmd.Slice()
	if err != nil {
		return 0, fmt.Errorf("stock: lend from sku %d bucket %d: %w", from.SKU, from.Bucket, err)
	}
	switch toInt(raw[0]) {
	case -1:
		return 0, fmt.Errorf("%w: sku %d bucket %d", ErrStateLost, from.SKU, from.Bucket)
	case -4:
		return 0, fmt.Errorf("%w: sku %d state is being rebuilt", ErrBusy, from.SKU)
	}
	n := toInt(raw[1])
	if n == 0 {
		return 0, nil
	}
	return s.land(ctx, from, to, id, n, fmt.Sprint(raw[2]))
}

// land is the second step of the move id of n units from one bucket to
// another, lent at the lender's epoch: it adds them to the receiver (once,
// however often it is called, and on the replicas before it returns), then
// drops the move from the lender's lent hash. It returns the units that
// arrived: n, or 0 when the receiver was rebuilt since the lend.
//
// A move that fails here stays in the lent hash, its units on sale
// nowhere (an undersell, never an oversell) until Settle or a rebuild
// lands or counts it.
func (s *Store) land(ctx context.Context, from, to Part, id string, n int64, epoch string) (int64, error) {
	code, err := s.receive(ctx, newKeys(s.o.Prefix, to), id, n, epoch)
	if err != nil {
		return 0, fmt.Errorf("stock: %d units in flight from bucket %d to %d of sku %d: %w", n, from.Bucket, to.Bucket, to.SKU, err)
	}
	fk := newKeys(s.o.Prefix, from)
	if code == -6 {
		return 0, s.refused(ctx, fk, from, to, id)
	}
	// Received now or before: the move is settled. A delete lost here is
	// done again by Settle, which finds the move received.
	_ = s.rdb.HDel(context.WithoutCancel(ctx), fk.lent, id).Err()
	return n, nil
}

// refused handles a move the receiver refused because a rebuild wrote it
// after the lend. When that rebuild wrote (or is writing) the lender too,
// it counted the units where it found them and drops the move: nothing is
// left to do. Otherwise the two buckets are of different rebuilds (one
// stopped part-way): the units stay in flight, and ErrStateLost asks for a
// rebuild, which counts them from SQL and brings the epochs together.
func (s *Store) refused(ctx context.Context, fk keys, from, to Part, id string) error {
	pipe := s.rdb.Pipeline()
	paused := pipe.Exists(ctx, fk.paused)
	lent := pipe.HExists(ctx, fk.lent, id)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("stock: move %s of sku %d: %w", id, from.SKU, err)
	}
	if paused.Val() == 1 || !lent.Val() {
		return nil
	}
	return fmt.Errorf("%w: sku %d buckets %d and %d were written by different rebuilds", ErrStateLost, from.SKU, from.Bucket, to.Bucket)
}

// receive runs receive.lua, on the replicas before it returns: code 1 or 0
// received, -6 refused (another epoch).
func (s *Store) receive(ctx context.Context, k keys, id string, n int64, epoch string) (int64, error) {
	cmd, err := s.o.Replicas.Run(ctx, receiveScript, []string{k.stock, k.paused, k.received}, id, n, epoch)
	if err != nil {
		return 0, err
	}
	raw, err := cmd.Slice()
	if err != nil {
		return 0, err
	}
	switch code := toInt(raw[0]); code {
	case -1:
		return code, ErrStateLost
	case -4:
		return code, ErrBusy
	default:
		return code, nil
	}
}

// Settle lands every move of sku's buckets (of buckets) that was lent and
// not settled — its process died between the two steps, or its receive
// failed — and returns the units that arrived. A move is landed only once
// the lender's shard has its lend on the replicas; one that its own
// process is landing at the same moment arrives once all the same.
func (s *Store) Settle(ctx context.Context, sku uint64, buckets int) (int64, error) {
	parts := Parts(sku, buckets)
	pipe := s.rdb.Pipeline()
	moves := make([]*redis.MapStringStringCmd, len(parts))
	ttls := make([]*redis.DurationCmd, len(parts))
	for i, p := range parts {
		k := newKeys(s.o.Prefix, p)
		moves[i] = pipe.HGetAll(ctx, k.lent)
		ttls[i] = pipe.PTTL(ctx, k.lent)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("stock: moves of sku %d: %w", sku, err)
	}
	var landed int64
	for i, from := range parts {
		if len(moves[i].Val()) == 0 {
			continue
		}
		k := newKeys(s.o.Prefix, from)
		if err := s.o.Replicas.Confirm(ctx, k.lent, max(ttls[i].Val(), time.Minute)); err != nil {
			return landed, fmt.Errorf("stock: moves of sku %d: %w", sku, err)
		}
		for id, v := range moves[i].Val() {
			n, to, epoch, ok := parseMove(v)
			if !ok || to >= len(parts) {
				continue
			}
			got, err := s.land(ctx, from, parts[to], id, n, epoch)
			landed += got
			if err != nil {
				return landed, err
			}
		}
	}
	return landed, nil
}

// parseMove reads a lent hash value, "units:bucket:epoch".
func parseMove(v string) (n int64, to int, epoch string, ok bool) {
	units, rest, ok1 := strings.Cut(v, ":")
	bucket, epoch, ok2 := strings.Cut(rest, ":")
	n, err1 := strconv.ParseInt(units, 10, 64)
	to, err2 := strconv.Atoi(bucket)
	return n, to, epoch, ok1 && ok2 && err1 == nil && err2 == nil && n > 0 && to >= 0
}

// Snap is what a SKU's buckets held at one instant (Snapshot).
type Snap struct {
	Left   []int64 // units left, by bucket
	Moving int64   // units lent by one bucket and not yet received by another
}

// Units is the units of the SKU on sale or on their way to a bucket.
func (sn Snap) Units() int64 {
	n := sn.Moving
	for _, l := range sn.Left {
		n += l
	}
	return n
}

// Snapshot returns what sku's buckets (of buckets) held at one instant, or
// ok false when the buckets changed while they were read (read again).
// Every bucket is read twice, one pipeline after the other. Each write that
// adds units to a bucket's left or a move to its lent hash bumps the
// bucket's ver, and every other write only takes units away, so a bucket
// that reads the same twice (ver, left, moved) did not change in between,
// and every bucket held those values at the instant between the two reads.
func (s *Store) Snapshot(ctx context.Context, sku uint64, buckets int) (sn Snap, ok bool, err error) {
	parts := Parts(sku, buckets)
	first, err := s.readBuckets(ctx, parts)
	var second bucketReads
	if err == nil && !first.lost {
		second, err = s.readBuckets(ctx, parts)
	}
	switch {
	case err != nil:
		return sn, false, err
	case first.lost || second.lost:
		return sn, false, fmt.Errorf("%w: sku %d", ErrStateLost, sku)
	case !first.same(second):
		return sn, false, nil
	}
	return second.snap(), true, nil
}

// leftReads bounds the pairs of reads Left makes of a SKU's buckets.
const leftReads = 8

// Left returns the units of sku (of buckets) on sale: those left in its
// buckets and those moving between two of them; ok is false when Redis has
// no state for one of its buckets. One bucket is read at once. Several are
// read twice, one pipeline after the other, as Snapshot does, until no
// unit arrived in a bucket or set off from one in between (no ver
// changed): then each bucket's left of the second read is at most what it
// held at the instant between the two reads (only buys took units
// meanwhile), and Left at most the units the SKU had then. Buys alone
// never make it read again. After leftReads pairs with a move or a return
// between the two reads of each, it adds up the last read, which may
// count a moving unit twice or not at all.
//
// While a rebuild writes the buckets one after the other (bucket 0, last,
// is paused until then), a bucket it wrote has forgotten the moves it
// received while its lender still counts them as moving: Left then leaves
// moving units out, and counts at most what the SKU had before the
// rebuild.
func (s *Store) Left(ctx context.Context, l Layout) (int64, bool, error) {
	parts := l.Parts()
	if len(parts) == 1 {
		r, err := s.readBuckets(ctx, parts)
		if err != nil || r.lost {
			return 0, false, err
		}
		return r.snap().Units(), true, nil
	}
	var first, second bucketReads
	for range leftReads {
		var err error
		if first, err = s.readBuckets(ctx, parts); err != nil || first.lost {
			return 0, false, err
		}
		if second, err = s.readBuckets(ctx, parts); err != nil || second.lost {
			return 0, false, err
		}
		if first.sameVers(second) {
			break
		}
	}
	sn := second.snap()
	if first.paused || second.paused {
		sn.Moving = 0
	}
	return sn.Units(), true, nil
}

// bucketRead is one bucket's ver, left and moved.
type bucketRead struct{ ver, left, moved int64 }

// bucketReads is a SKU's buckets, read in one pipeline.
type bucketReads struct {
	b      []bucketRead
	paused bool // bucket 0 is paused: a rebuild may be writing the buckets
	lost   bool // Redis has no state for one of the buckets
}

// same reports whether every bucket read the same in r and c.
func (r bucketReads) same(c bucketReads) bool {
	return slices.Equal(r.b, c.b) && r.paused == c.paused
}

// sameVers reports whether no bucket's ver (nor moved) differs in r and c.
func (r bucketReads) sameVers(c bucketReads) bool {
	for i := range r.b {
		if r.b[i].ver != c.b[i].ver || r.b[i].moved != c.b[i].moved {
			return false
		}
	}
	return true
}

// snap is what the buckets held when read.
func (r bucketReads) snap() Snap {
	sn := Snap{Left: make([]int64, len(r.b))}
	var moved int64
	for i, b := range r.b {
		sn.Left[i] = b.left
		moved += b.moved
	}
	// Each move is -n in its lender's moved until its receiver adds +n.
	sn.Moving = -moved
	return sn
}

// readBuckets reads every one of parts, and whether the first is paused, in
// one pipeline (one round trip per Cluster node).
func (s *Store) readBuckets(ctx context.Context, parts []Part) (bucketReads, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(parts))
	for i, p := range parts {
		cmds[i] = pipe.HMGet(ctx, newKeys(s.o.Prefix, p).stock, "ver", "left", "moved")
	}
	paused := pipe.Exists(ctx, newKeys(s.o.Prefix, parts[0]).paused)
	if _, err := pipe.Exec(ctx); err != nil {
		return bucketReads{}, fmt.Errorf("stock: buckets of sku %d: %w", parts[0].SKU, err)
	}
	out := bucketReads{b: make([]bucketRead, len(parts)), paused: paused.Val() == 1}
	for i, c := range cmds {
		v := c.Val()
		if len(v) < 3 || v[1] == nil {
			return bucketReads{lost: true}, nil
		}
		out.b[i] = bucketRead{ver: toInt(v[0]), left: toInt(v[1]), moved: toInt(v[2])}
	}
	return out, nil
}
