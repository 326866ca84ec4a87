package order

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/storeerr"
)

// serverPrefix starts the request ids the server makes.
const serverPrefix = "srv-"

// serverRequestID is the request id named in the answer to a buy sent
// without one whose outcome is unknown (err): "srv-" and the order id the
// buy would have got, so that a retry can settle whether it did (Outcome).
// A buy that failed before its script was sent wrote nothing: a random id
// then, which a retry uses as a client's.
func serverRequestID(err error) string {
	var ou *stock.OrderUncertainError
	if errors.As(err, &ou) {
		return serverPrefix + ou.OrderID
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return serverPrefix + hex.EncodeToString(b[:])
}

// serverOrder returns the order id a request id made by serverRequestID
// names, when it names one of sku's.
func serverOrder(sku uint64, requestID string) (string, bool) {
	id, ok := strings.CutPrefix(requestID, serverPrefix)
	if !ok {
		return "", false
	}
	s, _, _, ok := orderid.Parse(id)
	return id, ok && s == sku
}

// unknownOutcome is err, made an *UnknownOutcomeError naming rid when a
// store failed in a way that may have let the buy happen. busy and a lost
// state write nothing; without a request id there is nothing to name.
func unknownOutcome(rid string, err error) error {
	var uo *UnknownOutcomeError
	if err == nil || rid == "" || errors.As(err, &uo) || errors.Is(err, stock.ErrBusy) || errors.Is(err, stock.ErrStateLost) || !storeerr.Unavailable(err) {
		return err
	}
	return &UnknownOutcomeError{RequestID: rid, Err: err}
}

// settled answers the retry of a buy whose outcome was unknown, by the
// request id the server named (serverRequestID), with the order the first
// attempt made, if it made one: queued in Redis, or in SQL. Once asked,
// the first attempt can no longer run (stock.Store.Outcome), so a retry
// that finds nothing buys afresh, under the same request id.
func (s *Service) settled(ctx context.Context, user, orderID string) (found bool, err error) {
	if made, _ := orderid.Made(orderID); made.After(s.o.Now().Add(time.Minute)) {
		return false, fmt.Errorf("%w: request_id names an order not made yet", ErrInvalid)
	}
	p, _, err := s.partOf(ctx, orderID)
	if err != nil {
		return false, err
	}
	queued, err := s.store.Outcome(ctx, p, orderID, user)
	if err != nil || queued {
		return queued, err
	}
	o, err := find(ctx, s.db, orderID)
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return o.User == user, nil
}

// replayed is the answer to a request id that already got orderID: the
// order with its status now, or queued when the status cannot be read (the
// order id is what a retry needs).
func (s *Service) replayed(ctx context.Context, user, orderID string) Placed {
	p := Placed{OrderID: orderID, Replayed: true, Status: StatusQueued}
	if v, err := s.Get(ctx, user, orderID); err == nil {
		p.Status = v.Status
	}
	return p
}

// refuse answers a buy request that is refused with err, unless it carries
// a request id that already got an order: then the answer is that order.
// Only a request with a request id costs a Redis lookup here.
func (s *Service) refuse(ctx context.Context, sku *catalog.SKU, user string, in PlaceInput, err error) (Placed, error) {
	if in.RequestID == "" {
		return Placed{}, err
	}
	if aerr := s.admit(ctx, in); aerr != nil {
		return Placed{}, aerr
	}
	id, ok, lost, lerr := s.store.RequestOrder(ctx, sku.Layout().Home(user), user, in.RequestID)
	if lerr != nil {
		return Placed{}, lerr
	}
	if ok {
		return s.replayed(ctx, user, id), nil
	}
	if lost {
		// Redis lost the SKU and its request ids; SQL still has the orders
		// that reached it (the rebuild remembers them in Redis again).
		var o Order
		qerr := s.db.WithContext(ctx).Select("order_id").
			Take(&o, "sku_id = ? AND user_id = ? AND request_id = ?", sku.ID, user, in.RequestID).Error
		if qerr == nil {
			return s.replayed(ctx, user, o.OrderID), nil
		}
		if !errors.Is(qerr, gorm.ErrRecordNotFound) {
			return Placed{}, fmt.Errorf("order: request id: %w", qerr)
		}
	}
	if p, ok, serr := s.replayServer(ctx, sku.ID, user, in.RequestID); ok || serr != nil {
		return p, serr
	}
	return Placed{}, err
}

// replayServer answers a buy carrying a request id the server named for
// sku (serverOrder) with the order the first attempt made (settled); ok is
// false when it names none or the first attempt made none.
func (s *Service) replayServer(ctx context.Context, sku uint64, user, requestID string) (Placed, bool, error) {
	oid, ok := serverOrder(sku, requestID)
	if !ok {
		return Placed{}, false, nil
	}
	found, err := s.settled(ctx, user, oid)
	if err != nil || !found {
		return Placed{}, false, err
	}
	return s.replayed(ctx, user, oid), true, nil
}
