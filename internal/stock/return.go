package stock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/internal/backoff"
)

// ReturnReason is why an order's units come back (Return).
type ReturnReason string

const (
	// ReturnClosed means the shopper's order was cancelled or expired. The
	// shopper's count keeps its units when the SKU's limit counts such
	// orders (Config.LimitCountsCancelled).
	ReturnClosed ReturnReason = "closed"
	// ReturnVoid means the order never was the shopper's (an operator dropped
	// its dead letter): their count gives its units back.
	ReturnVoid ReturnReason = "void"
)

// Return gives the units of a closed or void order back to the part of its
// SKU it was taken from (PartOf), once per order id however often it is
// called, and tells every instance that stock is back. It reports whether
// this call returned them. ErrBusy while the SKU's state is being rebuilt
// (nothing changed: call again when it is done).
func (s *Store) Return(ctx context.Context, p Part, orderID, user string, qty int, why ReturnReason) (bool, error) {
	k := newKeys(s.o.Prefix, p)
	sku := p.SKU
	raw, err := returnScript.Run(ctx, s.rdb, []string{k.stock, k.buyers, k.returned, k.paused}, orderID, user, qty, string(why)).Slice()
	if err != nil {
		return false, fmt.Errorf("stock: return order %s: %w", orderID, err)
	}
	switch toInt(raw[0]) {
	case 1:
	case -4:
		return false, fmt.Errorf("%w: sku %d state is being rebuilt", ErrBusy, sku)
	default:
		return false, nil
	}
	s.announce(ctx, sku)
	return true, nil
}

// ReturnWhenFree is Return that waits out a rebuild of the SKU in progress
// (a few milliseconds) for up to 5 seconds, retrying with a growing pause:
// the rebuild reads SQL, so a return that lands during it would be counted
// by it or lost. After 5 seconds it returns ErrBusy.
func (s *Store) ReturnWhenFree(ctx context.Context, p Part, orderID, user string, qty int, why ReturnReason) (bool, error) {
	schedule := backoff.Exponential{Min: 20 * time.Millisecond, Max: 500 * time.Millisecond}
	deadline := time.Now().Add(5 * time.Second)
	for retry := 0; ; retry++ {
		returned, err := s.Return(ctx, p, orderID, user, qty, why)
		if !errors.Is(err, ErrBusy) || time.Now().After(deadline) {
			return returned, err
		}
		select {
		case <-ctx.Done():
			return false, err
		case <-time.After(schedule.Delay(retry)):
		}
	}
}
