package stripepay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/seckill/seckill/internal/order"
	swebhook "github.com/seckill/seckill/internal/webhook"
)

// The metadata seckill puts on a PaymentIntent, which its events carry
// back.
const (
	MetaOrderID   = "order_id"
	MetaReference = "payment_reference"
)

// EventSucceeded is the one event type that pays an order.
const EventSucceeded = "payment_intent.succeeded"

// Tolerance is how old an event's signature may be.
const Tolerance = 300 * time.Second

// ErrSignature is an event whose Stripe-Signature header is missing,
// malformed, older than Tolerance, or made with none of the webhook
// secrets. It is a webhook.ErrSignature.
var ErrSignature = fmt.Errorf("stripe: %w", swebhook.ErrSignature)

// Notice verifies an event's Stripe-Signature header against its body
// (stripe-go's webhook package, with every webhook secret in turn) and
// returns the payment it reports. ok is false for an event seckill does not
// act on: another type, or a PaymentIntent that is not an order's (no
// metadata of seckill's). Errors: ErrSignature; order.ErrInvalid for a
// signed body that is not an event of the expected shape.
func (c *Client) Notice(body []byte, signature string) (n order.PaymentNotice, ok bool, err error) {
	if err := c.verify(body, signature); err != nil {
		return order.PaymentNotice{}, false, err
	}
	return DecodeEvent(body)
}

// verify checks the signature with each secret: one that matches is
// enough.
func (c *Client) verify(body []byte, signature string) error {
	if len(c.secrets) == 0 {
		return fmt.Errorf("%w: no webhook secret configured", ErrSignature)
	}
	var err error
	for _, s := range c.secrets {
		err = webhook.ValidatePayloadWithTolerance(body, signature, s, Tolerance)
		if err == nil {
			return nil
		}
		if !errors.Is(err, webhook.ErrNoValidSignature) {
			break // missing, malformed or stale: the same with every secret
		}
	}
	return fmt.Errorf("%w: %w", ErrSignature, err)
}

// event is the part of a Stripe event seckill reads.
type event struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data *struct {
		Object *intent `json:"object"`
	} `json:"data"`
}

// intent is the part of a PaymentIntent seckill reads.
type intent struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	AmountReceived *int64            `json:"amount_received"`
	Currency       string            `json:"currency"`
	Metadata       map[string]string `json:"metadata"`
}

// DecodeEvent reads a verified event's body: for a payment_intent.succeeded
// of an order's PaymentIntent, the payment (the event id as the
// notification's id, the intent's id as the payment's, amount_received and
// the currency upper-cased, the order by metadata payment_reference and
// order_id). ok is false for an event not to act on. Errors wrap
// order.ErrInvalid and name what is wrong.
func DecodeEvent(body []byte) (n order.PaymentNotice, ok bool, err error) {
	var e event
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&e); err != nil {
		return n, false, fmt.Errorf("%w: the body must be a Stripe event, a JSON object with id, type and data.object", order.ErrInvalid)
	}
	if dec.More() {
		return n, false, fmt.Errorf("%w: the body must hold one JSON object", order.ErrInvalid)
	}
	if e.ID == "" {
		return n, false, fmt.Errorf("%w: the event has no id", order.ErrInvalid)
	}
	if e.Type != EventSucceeded {
		return n, false, nil
	}
	if e.Data == nil || e.Data.Object == nil {
		return n, false, fmt.Errorf("%w: a %s event must carry data.object", order.ErrInvalid, EventSucceeded)
	}
	pi := e.Data.Object
	switch {
	case pi.Object != "payment_intent" || pi.ID == "":
		return n, false, fmt.Errorf("%w: data.object must be a PaymentIntent with an id", order.ErrInvalid)
	case pi.Metadata[MetaOrderID] == "" && pi.Metadata[MetaReference] == "":
		return n, false, nil // not an order's: another use of the account
	case pi.AmountReceived == nil:
		return n, false, fmt.Errorf("%w: data.object.amount_received is required", order.ErrInvalid)
	}
	return order.PaymentNotice{
		WebhookID: e.ID, PaymentID: pi.ID,
		OrderID: pi.Metadata[MetaOrderID], PaymentReference: pi.Metadata[MetaReference],
		AmountCents: *pi.AmountReceived, Currency: strings.ToUpper(pi.Currency),
	}, true, nil
}
