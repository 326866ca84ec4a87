package client

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"time"

	"github.com/seckill/seckill/internal/backoff"
)

// Client calls the seckill API as one identity: every operation of the API
// (the methods of the embedded ClientWithResponses, such as
// GetSKUWithResponse or UpsertSKUWithResponse) and Buy. It is safe for
// concurrent use. A Client is cheap: a shop front makes one per shopper (and
// token), passing them all the same *http.Client (WithHTTPClient).
type Client struct {
	*ClientWithResponses
	// sleep waits d or until ctx ends; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

// New returns a client of the API at baseURL ("http://localhost:8080").
// opts say who the client is (WithShopper, WithBearer, WithAdminToken) and
// how it sends (WithHTTPClient; http.DefaultClient without it). New fails
// only on a malformed baseURL or an option's bad value.
func New(baseURL string, opts ...ClientOption) (*Client, error) {
	c, err := NewClientWithResponses(baseURL, opts...)
	if err != nil {
		return nil, err
	}
	return &Client{ClientWithResponses: c, sleep: sleep}, nil
}

// WithShopper identifies every request as the shopper id (1-64 letters,
// digits or - _ . : @) in the X-User-ID header: for a server whose auth.mode
// is header, which trusts the gateway in front of it to have authenticated
// the shopper.
func WithShopper(id string) ClientOption {
	return withHeader("X-User-ID", id, "shopper id")
}

// WithBearer identifies every request by Authorization: Bearer token: the
// shopper's JWT for a server whose auth.mode is jwt. When the token is
// renewed, make a Client with the new one.
func WithBearer(token string) ClientOption {
	return withHeader("Authorization", "Bearer "+token, "bearer token")
}

// WithAdminToken authorises every request with the admin token
// (admin.token), which the /admin operations need. It is sent as a bearer
// token, so a client is either the admin or a JWT-identified shopper.
func WithAdminToken(token string) ClientOption {
	return withHeader("Authorization", "Bearer "+token, "admin token")
}

func withHeader(name, value, what string) ClientOption {
	return func(c *RawClient) error {
		if value == "" || value == "Bearer " {
			return fmt.Errorf("client: empty %s", what)
		}
		return WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set(name, value)
			return nil
		})(c)
	}
}

// DefaultBuyAttempts is how many times Buy sends a buy unless WithAttempts
// says otherwise: the first time and three retries.
const DefaultBuyAttempts = 4

// BuyOption adds to a buy.
type BuyOption func(*buy)

type buy struct {
	body     PlaceOrderRequest
	attempts int
}

// WithRequestID sends the buy with this request id (1-64 letters, digits or
// - _ . : @) instead of one Buy makes. A buy with the request id of an
// accepted one, by the same shopper, returns that order instead of buying
// again: keep the id before buying, and a buy whose outcome was lost (a
// crash, an OutcomeUnknownError) is learned by buying again with it.
func WithRequestID(id string) BuyOption {
	return func(b *buy) { b.body.RequestId = id }
}

// WithPass sends the waiting room pass the shopper was admitted with, which
// a SKU with a waiting room needs (ErrPassRequired without it).
func WithPass(pass string) BuyOption {
	return func(b *buy) { b.body.Pass = pass }
}

// WithAttempts bounds how many times Buy sends the buy (at least 1; 1 does
// not retry).
func WithAttempts(n int) BuyOption {
	return func(b *buy) { b.attempts = max(n, 1) }
}

// retryWait is the back-off between attempts without a Retry-After.
var retryWait = backoff.Exponential{Min: 100 * time.Millisecond, Max: 2 * time.Second}

// Buy orders qty units of the SKU for the client's shopper and returns the
// accepted order (202): status queued, or, for a request id that bought
// before, that order with its status now.
//
// Every buy carries a request id (one Buy makes, or WithRequestID's), so
// Buy retries as the API tells a careful client to, and never buys twice: a
// 503 (busy: nothing was taken; unavailable: the outcome is unknown) and a
// request that got no answer are sent again with the same request id,
// after the answer's Retry-After (plus up to a quarter more, so that a
// crowd told the same second does not come back together) or else a
// back-off from 100 ms doubling to 2 s, at most DefaultBuyAttempts times in
// all (WithAttempts), while ctx lasts. A retry of a buy that went through
// returns its order.
//
// A refusal is an *APIError, and errors.Is names the documented ones:
// ErrSoldOut, ErrLimitExceeded, ErrSaleNotStarted, ErrSaleEnded,
// ErrPassRequired, ErrPassInvalid, ErrUnknownSKU, ErrRateLimited (not
// retried: its RetryAfter says when the shopper may try again),
// ErrUnauthorized and ErrInvalidRequest. When Buy stops (attempts used, or
// ctx done) after an attempt that may have bought, the error is an
// *OutcomeUnknownError holding the request id that learns the outcome;
// after busy answers only, nothing was bought and the error is the last
// *APIError (ErrBusy).
func (c *Client) Buy(ctx context.Context, skuID int64, qty int, opts ...BuyOption) (Placed, error) {
	b := buy{body: PlaceOrderRequest{SkuId: skuID, Qty: qty}, attempts: DefaultBuyAttempts}
	for _, o := range opts {
		o(&b)
	}
	if b.body.RequestId == "" {
		b.body.RequestId = rand.Text()
	}
	unknown := false // whether an attempt may have bought
	var err error
	for n := 0; ; n++ {
		a := c.buyOnce(ctx, b.body)
		if a.err == nil {
			return a.placed, nil
		}
		err = a.err
		unknown = unknown || a.unknown
		if !a.retry || n+1 >= b.attempts {
			break
		}
		d := retryWait.Jittered(n)
		if a.after > 0 {
			d = a.after + mrand.N(a.after/4+1)
		}
		if serr := c.sleep(ctx, d); serr != nil {
			err = fmt.Errorf("%w; the last attempt: %w", serr, err)
			break
		}
	}
	if unknown && !settles(err) {
		return Placed{}, &OutcomeUnknownError{RequestID: b.body.RequestId, Err: err}
	}
	return Placed{}, err
}

// attempt is what one sending of a buy came to.
type attempt struct {
	placed  Placed
	err     error
	retry   bool          // send it again, with the same request id
	unknown bool          // it may have bought
	after   time.Duration // the answer's Retry-After
}

// maxAnswer bounds the body of an answer Buy reads.
const maxAnswer = 1 << 20

func (c *Client) buyOnce(ctx context.Context, body PlaceOrderRequest) attempt {
	resp, err := c.PlaceOrder(ctx, body)
	if err != nil {
		// No answer: the buy may have reached the server.
		return attempt{err: fmt.Errorf("client: buy %s: %w", body.RequestId, err), unknown: true, retry: ctx.Err() == nil}
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return attempt{err: fmt.Errorf("client: buy %s: read the answer: %w", body.RequestId, err), unknown: true, retry: ctx.Err() == nil}
	}
	if resp.StatusCode == http.StatusAccepted {
		var p Placed
		if err := json.Unmarshal(data, &p); err != nil || p.OrderId == "" {
			return attempt{err: fmt.Errorf("client: buy %s: a 202 without an order: %q", body.RequestId, data), unknown: true}
		}
		return attempt{placed: p}
	}
	e := newAPIError(resp, data)
	a := attempt{err: e, after: e.RetryAfter}
	if resp.StatusCode == http.StatusServiceUnavailable && ctx.Err() == nil {
		a.retry = true
		a.unknown = e.Code != ErrorErrorBusy
	}
	return a
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
