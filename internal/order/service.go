package order

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/outbox"
	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/stock"
)

// DefaultPaymentTimeout is how long an order waits for payment unless
// configured otherwise (order.payment_timeout).
const DefaultPaymentTimeout = 15 * time.Minute

// Options configure a Service.
type Options struct {
	// PaymentTimeout is how long an order waits for payment before it
	// expires and its units return; zero means DefaultPaymentTimeout.
	PaymentTimeout time.Duration
	// PerAddress, when set, limits buy requests per client address. It is
	// consulted only for a request that is about to reach Redis: the answers
	// that need no store (unknown SKU, outside the window, qty over the
	// limit, known sold out) cost nothing, and are not counted.
	PerAddress Limiter
	// Currency is the ISO 4217 code of every price (payment.currency); a
	// payment in another is a mismatch.
	Currency string
	// Passes checks the waiting room pass of a buy of a SKU with a room.
	Passes  Passes
	Now     func() time.Time
	Log     *slog.Logger
	Metrics *Metrics
}

// Limiter is a request budget per key shared by every instance. A limiter
// that fails lets the request through: the sale must not stop because
// requests could not be counted.
type Limiter interface {
	Allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error)
}

// Passes checks a waiting room pass in process (internal/room): the
// pass it carries (ticket and expiry), or why not (no pass, or not a valid one for user and
// sku now).
type Passes interface {
	CheckPass(ctx context.Context, sku *catalog.SKU, user, pass string) (stock.Pass, error)
}

// Seller takes stock and enqueues the order in Redis (internal/stock's
// Seller).
type Seller interface {
	SoldOut(sku uint64) bool
	Buy(ctx context.Context, l stock.Layout, r stock.Request) (stock.Result, error)
}

// Service runs a shopper's operations on their orders.
type Service struct {
	db     *gorm.DB
	skus   *catalog.Store
	cache  *catalog.Cache
	store  *stock.Store
	seller Seller
	closer *Closer
	o      Options
}

// NewService returns a Service placing orders through seller and closing
// them with closer.
func NewService(db *gorm.DB, skus *catalog.Store, cache *catalog.Cache, store *stock.Store, seller Seller, closer *Closer, o Options) *Service {
	o.PaymentTimeout = cmp.Or(o.PaymentTimeout, DefaultPaymentTimeout)
	o.Log = cmp.Or(o.Log, slog.Default())
	o.Currency = cmp.Or(o.Currency, "USD")
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{db: db, skus: skus, cache: cache, store: store, seller: seller, closer: closer, o: o}
}

// PlaceInput is a shopper's buy request.
type PlaceInput struct {
	SKU       uint64
	Qty       int
	RequestID string
	// Pass is the waiting room pass of a SKU with a room ("" otherwise).
	Pass string
	// Client is the address the request came from, for Options.PerAddress.
	Client string
}

// MaxPassLen bounds a pass a client sends (a real one is about 110 bytes).
const MaxPassLen = 256

// Validate checks a buy request by user before any I/O: a valid user id
// (ValidUserID), a SKU id from 1 to catalog.MaxID, a qty from 1 to MaxQty and, when given, a
// request id of 1 to MaxRequestIDLen letters, digits or - _ . : @. The error
// wraps ErrInvalid.
func (in PlaceInput) Validate(user string) error {
	switch {
	case !ValidUserID(user):
		return fmt.Errorf("%w: user id must be 1 to %d letters, digits or - _ . : @", ErrInvalid, MaxUserIDLen)
	case !catalog.ValidID(in.SKU):
		return fmt.Errorf("%w: sku_id must be an integer from 1 to %d", ErrInvalid, uint64(catalog.MaxID))
	case in.Qty < 1 || in.Qty > MaxQty:
		return fmt.Errorf("%w: qty must be from 1 to %d", ErrInvalid, MaxQty)
	case in.RequestID != "" && !validToken(in.RequestID, MaxRequestIDLen):
		return fmt.Errorf("%w: request_id must be 1 to %d letters, digits or - _ . : @", ErrInvalid, MaxRequestIDLen)
	case len(in.Pass) > MaxPassLen:
		return fmt.Errorf("%w: pass must be at most %d bytes", ErrInvalid, MaxPassLen)
	}
	return nil
}

// Placed is an accepted order.
type Placed struct {
	OrderID  string
	Replayed bool   // the request id was seen before; this is the order it got
	Status   string // StatusQueued for a new order; a replayed one's status now
}

// Place validates a buy request and hands it to the seller. A request id
// this shopper's earlier request got an order with is answered with that
// order (Replayed) whatever the SKU's state now: sold out, ended, paused or
// the shopper's limit reached. Errors: ErrInvalid, catalog.ErrNotFound,
// ErrNotStarted, ErrEnded, ErrLimitExceeded, stock.ErrSoldOut,
// stock.ErrLimitExceeded, stock.ErrRateLimited (a *stock.RateLimitedError),
// stock.ErrBusy, stock.ErrStateLost, or an internal error.
//
// Answers that need no store come first and cost no Redis call: unknown
// SKU (from the catalog's cache), outside the window, qty over the limit,
// known sold out. Only such a refusal carrying a request id looks the
// request id up. The rate limits apply to requests that reach Redis.
//
// A failure of a store after which the order may exist (a reply that timed
// out, a write not yet on the replicas, a connection lost) is an
// *UnknownOutcomeError naming the request id to retry with: the client's,
// or one made here when the client sent none. One is made only for a buy
// that reaches the buy script, and only an accepted order keeps it.
func (s *Service) Place(ctx context.Context, user string, in PlaceInput) (Placed, error) {
	if err := in.Validate(user); err != nil {
		return Placed{}, err
	}
	p, err := s.place(ctx, user, in)
	return p, unknownOutcome(in.RequestID, err)
}

// place is Place for a valid request.
func (s *Service) place(ctx context.Context, user string, in PlaceInput) (Placed, error) {
	sku, err := s.cache.Get(ctx, in.SKU)
	if err != nil {
		return Placed{}, err
	}
	now := s.o.Now()
	switch {
	case now.Before(sku.StartsAt):
		return s.refuse(ctx, sku, user, in, ErrNotStarted)
	case !now.Before(sku.EndsAt):
		return s.refuse(ctx, sku, user, in, ErrEnded)
	case in.Qty > sku.PerUserLimit:
		return s.refuse(ctx, sku, user, in, overLimit(sku))
	case s.seller.SoldOut(sku.ID):
		// Known here already: no order id to make, no Redis call.
		return s.refuse(ctx, sku, user, in, stock.ErrSoldOut)
	}
	if sku.Drop != 0 {
		// One pass of the drop's room buys once, so no shopper takes more
		// than the drop's limit over its SKUs.
		lead, err := s.cache.Get(ctx, sku.Drop)
		if err != nil {
			return Placed{}, err
		}
		if lead.Group != nil && in.Qty > lead.Group.PerUserLimit {
			return s.refuse(ctx, sku, user, in, fmt.Errorf("%w: at most %d per shopper over drop %d", ErrLimitExceeded, lead.Group.PerUserLimit, sku.Drop))
		}
	}
	var pass stock.Pass
	if sku.Room.On() || sku.Drop != 0 {
		if s.o.Passes == nil {
			return s.refuse(ctx, sku, user, in, ErrNoPasses)
		}
		if pass, err = s.o.Passes.CheckPass(ctx, sku, user, in.Pass); err != nil {
			return s.refuse(ctx, sku, user, in, err)
		}
	}
	if err := s.admit(ctx, in); err != nil {
		return Placed{}, err
	}
	// The retry of a buy whose outcome was unknown, by the request id the
	// server named: the order the first attempt made, if any.
	if p, ok, err := s.replayServer(ctx, sku.ID, user, in.RequestID); ok || err != nil {
		return p, err
	}
	res, err := s.seller.Buy(ctx, sku.Layout(), stock.Request{
		User: user, Qty: in.Qty, RequestID: in.RequestID,
		PriceCents: sku.PriceCents * int64(in.Qty), Created: now, Pass: pass,
	})
	switch {
	case errors.Is(err, stock.ErrLimitExceeded):
		return s.refuse(ctx, sku, user, in, overLimit(sku))
	case errors.Is(err, stock.ErrSoldOut), errors.Is(err, stock.ErrBusy), errors.Is(err, stock.ErrStateLost), errors.Is(err, stock.ErrPassSpent):
		// The buy script answers a replay before anything else, but these
		// may come before it runs (the sold-out flag, a rebuild's pause).
		return s.refuse(ctx, sku, user, in, err)
	case err != nil && in.RequestID == "":
		// The request id to retry with is made only now, when the answer
		// needs one (serverRequestID).
		return Placed{}, unknownOutcome(serverRequestID(err), err)
	case err != nil:
		return Placed{}, unknownOutcome(in.RequestID, err)
	}
	if res.Replayed {
		return s.replayed(ctx, user, res.OrderID), nil
	}
	return Placed{OrderID: res.OrderID, Status: StatusQueued}, nil
}

// overLimit is the refusal of a buy that would take the shopper over sku's
// limit, whether the qty alone is over it or the units they hold already.
func overLimit(sku *catalog.SKU) error {
	return fmt.Errorf("%w: at most %d per shopper", ErrLimitExceeded, sku.PerUserLimit)
}

// admit charges a request about to reach Redis to its client address's
// budget (Options.PerAddress).
func (s *Service) admit(ctx context.Context, in PlaceInput) error {
	if s.o.PerAddress == nil || in.Client == "" {
		return nil
	}
	ok, wait, err := s.o.PerAddress.Allow(ctx, "ip:"+in.Client)
	if err != nil {
		s.o.Log.WarnContext(ctx, "rate limiter unavailable; letting the request through", "err", err.Error())
		return nil
	}
	if !ok {
		return &stock.RateLimitedError{RetryAfter: wait}
	}
	return nil
}

// Get returns the user's order: from SQL once it is there, from its SKU's
// queue (status queued) before. Another user's order is ErrNotFound.
func (s *Service) Get(ctx context.Context, user, orderID string) (*View, error) {
	if _, _, _, ok := orderid.Parse(orderID); !ok {
		return nil, fmt.Errorf("%w: malformed order id", ErrNotFound)
	}
	o, err := find(ctx, s.db, orderID)
	if err == nil {
		if o.User != user {
			return nil, ErrNotFound
		}
		return o.View(), nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	// Not in SQL yet: in the queue of the part its SKU's layout names.
	part, batch, err := s.partOf(ctx, orderID)
	if err != nil {
		return nil, err
	}
	t, err := s.queued(ctx, part, batch, orderID)
	if errors.Is(err, ErrNotFound) {
		// The drain may have moved it between the two reads.
		if o, err2 := find(ctx, s.db, orderID); err2 == nil && o.User == user {
			return o.View(), nil
		}
	}
	if err != nil {
		return nil, err
	}
	if t.User != user {
		return nil, ErrNotFound
	}
	v := s.taskView(t)
	return &v, nil
}

// partOf returns the part of its SKU's stock order orderID was taken from
// (the SKU's layout says where a SKU of a drop keeps it) and its batch:
// ErrNotFound for a malformed id.
func (s *Service) partOf(ctx context.Context, orderID string) (stock.Part, string, error) {
	sku, _, batch, ok := orderid.Parse(orderID)
	if !ok {
		return stock.Part{}, "", fmt.Errorf("%w: malformed order id", ErrNotFound)
	}
	p, err := s.cache.PartOf(ctx, sku, orderID)
	return p, batch, err
}

// taskView is an order still in its SKU's queue, as its shopper sees it.
func (s *Service) taskView(t stock.OrderTask) View {
	created := time.UnixMilli(t.CreatedMS).UTC()
	ref, _ := orderid.Reference(t.OrderID)
	return View{OrderID: t.OrderID, SKU: t.SKU, User: t.User, Qty: t.Qty, PriceCents: t.PriceCents,
		Status: StatusQueued, CreatedAt: created, ExpiresAt: created.Add(s.o.PaymentTimeout), PaymentReference: ref}
}

// find reads an order row.
func find(ctx context.Context, db *gorm.DB, orderID string) (*Order, error) {
	return take[Order](ctx, db, orderID)
}

// take reads the row of orderID into a T, a model of the orders table.
func take[T any](ctx context.Context, db *gorm.DB, orderID string) (*T, error) {
	var row T
	err := db.WithContext(ctx).Take(&row, "order_id = ?", orderID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("order: read %s: %w", orderID, err)
	}
	return &row, nil
}

// queued returns an order still in its SKU's queue, in the task of the
// batch it was accepted in.
func (s *Service) queued(ctx context.Context, p stock.Part, batch, orderID string) (stock.OrderTask, error) {
	info, err := s.store.Lookup(p).Inspect(ctx, batch)
	if errors.Is(err, queue.ErrNotFound) {
		return stock.OrderTask{}, ErrNotFound
	}
	if err != nil {
		return stock.OrderTask{}, fmt.Errorf("order: inspect queue: %w", err)
	}
	if info.Type != stock.TaskCreate {
		return stock.OrderTask{}, ErrNotFound
	}
	orders, _ := stock.DecodeOrders(info.Payload)
	for _, t := range orders {
		if t.OrderID == orderID {
			return t, nil
		}
	}
	return stock.OrderTask{}, ErrNotFound
}

// Pay marks the user's pending order paid before its deadline. Paying a paid
// order again succeeds. Errors: ErrNotFound, ErrQueued (not in SQL yet),
// ErrClosed (cancelled, expired, failed, or past its deadline).
func (s *Service) Pay(ctx context.Context, user, orderID string) (*View, error) {
	for try := 0; ; try++ {
		now := s.o.Now().UTC()
		var paid bool
		err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			res := tx.Model(&Order{}).
				Where("order_id = ? AND user_id = ? AND status = ? AND expires_at > ?", orderID, user, StatusPendingPayment, now).
				Updates(map[string]any{"status": StatusPaid, "paid_at": now, "updated_at": now})
			if res.Error != nil || res.RowsAffected != 1 {
				return res.Error
			}
			paid = true
			return s.closer.rows.eventOf(tx, outbox.OrderPaid, orderID, nil, now)
		})
		if err != nil {
			return nil, fmt.Errorf("order: pay %s: %w", orderID, err)
		}
		v, err := s.Get(ctx, user, orderID)
		if err != nil {
			return nil, err
		}
		if paid {
			// The payment deadline finds the order paid and leaves it. Support
			// staff may have cancelled it since, owing the shopper a refund:
			// the payment was made all the same, and is answered as made.
			s.o.Metrics.paid()
			return v, nil
		}
		switch v.Status {
		case StatusPaid:
			return v, nil
		case StatusQueued:
			return nil, ErrQueued
		case StatusPendingPayment:
			// The drain wrote the order to SQL after the update looked for
			// it: pay it now. Pending once more, it is past its deadline.
			if try == 0 {
				continue
			}
		}
		return nil, ErrClosed
	}
}

// Cancel cancels the user's pending order and returns its units. Cancelling a
// cancelled order again succeeds. Errors: ErrNotFound, ErrQueued,
// ErrNotCancellable (paid), ErrClosed (expired or failed).
func (s *Service) Cancel(ctx context.Context, user, orderID string) (*View, error) {
	v, err := s.Get(ctx, user, orderID)
	if err != nil {
		return nil, err
	}
	switch v.Status {
	case StatusQueued:
		return nil, ErrQueued
	case StatusPaid:
		return nil, ErrNotCancellable
	case StatusExpired, StatusFailed:
		return nil, ErrClosed
	}
	o, err := s.closer.Close(ctx, orderID, StatusCancelled, time.Time{})
	if err != nil {
		return nil, err
	}
	switch o.Status {
	case StatusCancelled:
		return o.View(), nil
	case StatusPaid:
		return nil, ErrNotCancellable
	default:
		return nil, ErrClosed
	}
}
