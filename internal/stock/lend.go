package stock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
)

// Borrow moves units left from the other buckets of p's SKU (of buckets)
// into p until p has received at least need, or every other bucket was
// asked. It returns the units p received, and whether some of the buckets
// that had none left have units on their way to another bucket: 0 units,
// not moving and a nil error mean the SKU is sold out. Each move is two
// steps, lend.lua on the lending bucket and receive.lua on p; see those
// scripts.
func (s *Store) Borrow(ctx context.Context, p Part, buckets int, need int64) (got int64, moving bool, err error) {
	for i := 1; i < buckets && got < need; i++ {
		from := Part{SKU: p.SKU, Bucket: (p.Bucket + i) % buckets}
		n, m, err := s.move(ctx, from, p, need-got)
		got += n
		moving = moving || m
		if err != nil {
			return got, moving, err
		}
	}
	return got, moving, nil
}

// move lends up to want units (or more: see lend.lua) from one bucket to
// another and returns how many arrived; moving reports that from had none
// to lend but has earlier transfers not settled.
func (s *Store) move(ctx context.Context, from, to Part, want int64) (n int64, moving bool, err error) {
	var b [9]byte
	_, _ = rand.Read(b[:])
	id := strconv.Itoa(from.Bucket) + ">" + strconv.Itoa(to.Bucket) + ":" + hex.EncodeToString(b[:])
	fk, tk := newKeys(s.o.Prefix, from), newKeys(s.o.Prefix, to)
	raw, err := lendScript.Run(ctx, s.rdb, []string{fk.stock, fk.paused, fk.lent}, id, want, to.Bucket).Slice()
	if err != nil {
		return 0, false, fmt.Errorf("stock: lend from sku %d bucket %d: %w", from.SKU, from.Bucket, err)
	}
	n, epoch := toInt(raw[1]), fmt.Sprint(raw[2])
	switch toInt(raw[0]) {
	case -1:
		return 0, false, fmt.Errorf("%w: sku %d bucket %d", ErrStateLost, from.SKU, from.Bucket)
	case -4:
		return 0, false, fmt.Errorf("%w: sku %d state is being rebuilt", ErrBusy, from.SKU)
	}
	if n == 0 {
		return 0, len(raw) > 3 && toInt(raw[3]) > 0, nil
	}
	code, err := s.receive(ctx, tk, id, n, epoch)
	if err != nil {
		// The units are in neither bucket's left until a reconcile: an
		// undersell, never an oversell.
		return 0, false, fmt.Errorf("stock: %d units in flight from bucket %d to %d of sku %d: %w", n, from.Bucket, to.Bucket, to.SKU, err)
	}
	// Received (now or before), or refused for good: either way the
	// transfer is settled.
	_ = s.rdb.HDel(context.WithoutCancel(ctx), fk.lent, id).Err()
	if code == -6 {
		return 0, false, nil
	}
	return n, false, nil
}

// receive runs receive.lua: code 1 or 0 received, -6 refused for good.
func (s *Store) receive(ctx context.Context, k keys, id string, n int64, epoch string) (int64, error) {
	raw, err := receiveScript.Run(ctx, s.rdb, []string{k.stock, k.paused, k.received}, id, n, epoch).Slice()
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
