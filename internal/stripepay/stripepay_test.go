package stripepay

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/testsvc"
)

// What the client sends Stripe's API (stripe-mock, behind a recording
// proxy: it answers fixtures and remembers nothing) and what it makes of
// the answers.
func TestTheClientAgainstStripeMock(t *testing.T) {
	api := testsvc.Stripe(t)
	c := New(Options{SecretKey: "sk_test_seckillTestKey0123456789", APIBase: api.URL})
	ctx := context.Background()
	ch := order.Charge{OrderID: "42-0123456789abcdefghjkmnpq", Reference: "0000000000000000000000000000AbCd", AmountCents: 1999, Currency: "EUR"}
	op, err := c.Open(ctx, ch)
	require.NoError(t, err)
	assert.NotEmpty(t, op.PaymentID)
	assert.NotEmpty(t, op.ClientSecret)
	calls := api.Calls("POST", "/v1/payment_intents")
	require.Len(t, calls, 1)
	assert.Equal(t, ch.Reference, calls[0].IdempotencyKey)
	assert.Equal(t, "1999", calls[0].Form.Get("amount"))
	assert.Equal(t, "eur", calls[0].Form.Get("currency"))
	assert.Equal(t, ch.OrderID, calls[0].Form.Get("metadata[order_id]"))
	assert.Equal(t, ch.Reference, calls[0].Form.Get("metadata[payment_reference]"))

	ch.PaymentID = op.PaymentID
	again, err := c.Open(ctx, ch)
	require.NoError(t, err)
	assert.Equal(t, op.PaymentID, again.PaymentID)
	assert.Len(t, api.Calls("POST", "/v1/payment_intents"), 1, "the intent opened before is read, not opened again")
	assert.Len(t, api.Calls("GET", "/v1/payment_intents/"+op.PaymentID), 1)

	require.NoError(t, c.Void(ctx, op.PaymentID))
	assert.Len(t, api.Calls("POST", "/v1/payment_intents/"+op.PaymentID+"/cancel"), 1)

	id, err := c.Refund(ctx, op.PaymentID, "refund_"+ch.Reference)
	require.NoError(t, err)
	assert.NotEmpty(t, id)
	refunds := api.Calls("POST", "/v1/refunds")
	require.Len(t, refunds, 1)
	assert.Equal(t, op.PaymentID, refunds[0].Form.Get("payment_intent"))
	assert.Equal(t, "refund_"+ch.Reference, refunds[0].IdempotencyKey)

	// Refusals: a refund Stripe refuses says why; an intent that can no
	// longer be cancelled is left as it is.
	api.Refuse("POST", "/v1/refunds", "charge_already_refunded", "Charge ch_1 has already been refunded.")
	_, err = c.Refund(ctx, op.PaymentID, "refund_x")
	var refused *order.RefusedError
	require.ErrorAs(t, err, &refused)
	assert.Contains(t, refused.Reason, "Charge ch_1 has already been refunded.")
	assert.Contains(t, refused.Reason, "charge_already_refunded")
	api.Refuse("POST", "/v1/payment_intents/", "payment_intent_unexpected_state", "This PaymentIntent's status is succeeded.")
	assert.NoError(t, c.Void(ctx, op.PaymentID))
	api.Refuse("POST", "/v1/payment_intents", "amount_too_small", "Amount must be at least €0.50 eur")
	_, err = c.Open(ctx, order.Charge{OrderID: ch.OrderID, Reference: "x", AmountCents: 1, Currency: "EUR"})
	require.ErrorAs(t, err, &refused)
	assert.Contains(t, refused.Reason, "amount_too_small")
}

func TestAnUnreachableAPIIsErrProvider(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := New(Options{SecretKey: "sk_test_seckillTestKey0123456789", APIBase: "http://" + addr})
	_, err = c.Open(context.Background(), order.Charge{OrderID: "1-0123456789abcdefghjkmnpq", Reference: "r", AmountCents: 1, Currency: "EUR"})
	assert.ErrorIs(t, err, order.ErrProvider)
	var refused *order.RefusedError
	assert.False(t, errors.As(err, &refused))
	assert.NotContains(t, err.Error(), "seckillTestKey", "the error shows the key")
	assert.ErrorIs(t, c.Void(context.Background(), "pi_1"), order.ErrProvider)
}
