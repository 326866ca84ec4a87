// Package stripepay is seckill's client of Stripe (payment.mode stripe),
// through github.com/stripe/stripe-go: it opens one PaymentIntent per order
// (the order's payment reference is the idempotency key), cancels it when
// the order closes unpaid, refunds it when support staff cancel the paid
// order (once, by its key), and reads Stripe's signed events into payment
// notices for internal/order.
//
// The secret key and the webhook secrets stay in this package: no error or
// log line holds them.
package stripepay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/seckill/seckill/internal/order"
)

// Options configure a Client.
type Options struct {
	SecretKey string
	// WebhookSecrets are the endpoint's signing secrets: an event signed
	// with any of them is accepted.
	WebhookSecrets []string
	// APIBase is the API's address; empty for Stripe's.
	APIBase string
	// HTTPClient makes the API calls; nil: one with a 10 s timeout.
	HTTPClient *http.Client
}

// Client calls Stripe's API and verifies its events.
type Client struct {
	sc      *stripe.Client
	secrets []string
}

// New returns a Client.
func New(o Options) *Client {
	hc := cmp.Or(o.HTTPClient, &http.Client{Timeout: 10 * time.Second})
	cfg := &stripe.BackendConfig{
		HTTPClient: hc,
		// stripe-go's own retries of a failed connection reuse the call's
		// idempotency key, so a retry never charges or refunds twice.
		MaxNetworkRetries: stripe.Int64(2),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	if o.APIBase != "" {
		cfg.URL = stripe.String(strings.TrimSuffix(o.APIBase, "/"))
	}
	return &Client{
		sc:      stripe.NewClient(o.SecretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(cfg))),
		secrets: o.WebhookSecrets,
	}
}

// Open creates the order's PaymentIntent for exactly its amount and
// currency, carrying metadata order_id and payment_reference, with the
// reference as idempotency key; or, when the order has one already,
// retrieves it.
func (c *Client) Open(ctx context.Context, ch order.Charge) (order.Opened, error) {
	var pi *stripe.PaymentIntent
	var err error
	if ch.PaymentID != "" {
		pi, err = c.sc.V1PaymentIntents.Retrieve(ctx, ch.PaymentID, nil)
	} else {
		p := &stripe.PaymentIntentCreateParams{
			Amount:   stripe.Int64(ch.AmountCents),
			Currency: stripe.String(strings.ToLower(ch.Currency)),
			Metadata: map[string]string{MetaOrderID: ch.OrderID, MetaReference: ch.Reference},
		}
		p.SetIdempotencyKey(ch.Reference)
		pi, err = c.sc.V1PaymentIntents.Create(ctx, p)
	}
	if err != nil {
		return order.Opened{}, apiError("open the payment", err)
	}
	if pi.ID == "" || pi.ClientSecret == "" {
		return order.Opened{}, fmt.Errorf("%w: stripe: a PaymentIntent without an id or a client secret", order.ErrProvider)
	}
	return order.Opened{PaymentID: pi.ID, ClientSecret: pi.ClientSecret}, nil
}

// Void cancels PaymentIntent id. One that can no longer be cancelled
// (cancelled before, or succeeded: a payment then arrives as refund_due)
// is left as it is.
func (c *Client) Void(ctx context.Context, id string) error {
	_, err := c.sc.V1PaymentIntents.Cancel(ctx, id, nil)
	var se *stripe.Error
	if errors.As(err, &se) && se.Code == stripe.ErrorCodePaymentIntentUnexpectedState {
		return nil
	}
	if err != nil {
		return apiError("cancel the payment", err)
	}
	return nil
}

// Refund refunds PaymentIntent id whole, with key as idempotency key, and
// returns the refund's id.
func (c *Client) Refund(ctx context.Context, id, key string) (string, error) {
	p := &stripe.RefundCreateParams{PaymentIntent: stripe.String(id)}
	p.SetIdempotencyKey(key)
	r, err := c.sc.V1Refunds.Create(ctx, p)
	if err != nil {
		return "", apiError("refund", err)
	}
	if r.ID == "" {
		return "", fmt.Errorf("%w: stripe: a refund without an id", order.ErrProvider)
	}
	return r.ID, nil
}

// apiError is err of a call to the API: an *order.RefusedError for a
// request Stripe refused (4xx but 429), with Stripe's message; ErrProvider
// otherwise (unreachable, 429, 5xx), which the same call later may pass.
func apiError(what string, err error) error {
	var se *stripe.Error
	if errors.As(err, &se) && se.HTTPStatusCode >= 400 && se.HTTPStatusCode < 500 && se.HTTPStatusCode != http.StatusTooManyRequests {
		reason := se.Msg
		if se.Code != "" {
			reason = string(se.Code) + ": " + reason
		}
		return &order.RefusedError{Reason: "stripe: " + what + ": " + reason}
	}
	if errors.As(err, &se) {
		return fmt.Errorf("%w: stripe: %s: status %d", order.ErrProvider, what, se.HTTPStatusCode)
	}
	return fmt.Errorf("%w: stripe: %s: %w", order.ErrProvider, what, err)
}
