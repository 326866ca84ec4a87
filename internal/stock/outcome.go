package stock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/orderid"
)

var (
	//go:embed lua/outcome.lua
	outcomeLua    string
	outcomeScript = redis.NewScript(outcomeLua)
)

// UncertainError is a buy script that failed after it was sent (a reply
// that timed out, a connection lost, a write not yet on enough replicas):
// it may have run. Each request of the batch would have got the order id
// OrderFor(i); Outcome settles whether it did.
type UncertainError struct {
	batch *orderid.Batch
	Err   error
}

func (e *UncertainError) Error() string { return e.Err.Error() }
func (e *UncertainError) Unwrap() error { return e.Err }

// OrderFor is the order id request i of the batch would have got.
func (e *UncertainError) OrderFor(i int) string { return e.batch.Order(i) }

// OrderUncertainError is an UncertainError for one request: OrderID is the
// order it got if the script ran and accepted it.
type OrderUncertainError struct {
	OrderID string
	Err     error
}

func (e *OrderUncertainError) Error() string { return e.Err.Error() }
func (e *OrderUncertainError) Unwrap() error { return e.Err }

// forRequest is err as the answer to request i of the batch it failed.
func forRequest(err error, i int) error {
	var ue *UncertainError
	if errors.As(err, &ue) {
		return &OrderUncertainError{OrderID: ue.OrderFor(i), Err: err}
	}
	return err
}

// Outcome settles whether the order orderID (an id a buy script that
// failed uncertainly would have given user's request: OrderUncertainError)
// exists in Redis: queued reports that its batch's task holds it, for
// user. When it does not, the batch can no longer run: either it ran and
// its orders are in SQL (or it did not accept this one), or it never ran.
// When Redis has no state for the order's part (it lost its data), only
// SQL can tell: queued is false. p is the part the order would be of (the
// SKU's Layout.Of). Errors: ErrBusy when the batch was made after now (a
// clock ahead of this one's made it: retry later).
func (s *Store) Outcome(ctx context.Context, p Part, orderID, user string) (queued bool, err error) {
	_, _, batch, ok := orderid.Parse(orderID)
	made, ok2 := orderid.Made(orderID)
	if !ok || !ok2 {
		return false, fmt.Errorf("stock: outcome of %q: not an order id", orderID)
	}
	if wait := made.Sub(s.o.Now()); wait > 0 {
		return false, fmt.Errorf("%w: order %s was made %s ahead of this clock", ErrBusy, orderID, wait.Round(time.Millisecond))
	}
	q := s.Lookup(p).EnqueueKeys() // ready, data, meta, wake
	keys := []string{newKeys(s.o.Prefix, p).stock, q[2], q[1]}
	cmd, err := s.o.Replicas.Run(ctx, outcomeScript, keys, batch, made.UnixMilli())
	if err != nil {
		return false, fmt.Errorf("stock: outcome of order %s: %w", orderID, err)
	}
	raw, err := cmd.Slice()
	if err != nil || len(raw) == 0 {
		return false, fmt.Errorf("stock: outcome of order %s: reply %v: %w", orderID, raw, err)
	}
	if toInt(raw[0]) != 1 || len(raw) < 2 {
		return false, nil
	}
	payload, _ := raw[1].(string)
	orders, _ := DecodeOrders([]byte(payload))
	for _, o := range orders {
		if o.OrderID == orderID && o.User == user {
			return true, nil
		}
	}
	return false, nil
}
