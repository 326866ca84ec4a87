package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/order"
)

// Payments is what the payment endpoints need: applying the payment side's
// notifications, listing what they did, and the checkout answer of a
// shopper's pay in webhook mode.
type Payments interface {
	ApplyPayment(ctx context.Context, n order.PaymentNotice) (*order.PaymentResult, error)
	Payments(ctx context.Context, q order.PaymentQuery, after uint64, limit int) ([]order.Payment, uint64, error)
	Checkout(ctx context.Context, user, orderID string) (*order.Checkout, error)
}

// WebhookVerifier checks a webhook's signature headers against its body.
type WebhookVerifier interface {
	Verify(body []byte, h http.Header) error
}

// eventPaymentSucceeded is the one notification type POST /webhooks/payments
// takes.
const eventPaymentSucceeded = "payment.succeeded"

// paymentNotification is the body of POST /webhooks/payments. Fields it
// does not name are ignored: a payment side adds its own.
type paymentNotification struct {
	Type string `json:"type"`
	Data *struct {
		OrderID          *string `json:"order_id"`
		PaymentReference *string `json:"payment_reference"`
		AmountCents      *int64  `json:"amount_cents"`
		Currency         *string `json:"currency"`
		PaymentID        *string `json:"payment_id"`
	} `json:"data"`
}

// notice reads a verified notification's body; invalid_request naming what
// is missing or of the wrong type.
func notice(body []byte, webhookID string) (order.PaymentNotice, error) {
	var n paymentNotification
	if err := json.Unmarshal(body, &n); err != nil {
		return order.PaymentNotice{}, invalid("the body must be a JSON object {\"type\":\"payment.succeeded\",\"data\":{\"order_id\" or \"payment_reference\",\"amount_cents\",\"currency\",\"payment_id\"}}: " + jsonProblem(body, &n, err))
	}
	if n.Type != eventPaymentSucceeded {
		return order.PaymentNotice{}, invalid("type must be payment.succeeded")
	}
	d := n.Data
	switch {
	case d == nil:
		return order.PaymentNotice{}, invalid("data is required")
	case d.OrderID == nil && d.PaymentReference == nil:
		return order.PaymentNotice{}, invalid("data.order_id or data.payment_reference is required")
	case d.AmountCents == nil:
		return order.PaymentNotice{}, invalid("data.amount_cents is required")
	case d.Currency == nil:
		return order.PaymentNotice{}, invalid("data.currency is required")
	case d.PaymentID == nil:
		return order.PaymentNotice{}, invalid("data.payment_id is required")
	}
	pn := order.PaymentNotice{WebhookID: webhookID, PaymentID: *d.PaymentID,
		AmountCents: *d.AmountCents, Currency: *d.Currency}
	if d.OrderID != nil {
		pn.OrderID = *d.OrderID
	}
	if d.PaymentReference != nil {
		pn.PaymentReference = *d.PaymentReference
	}
	return pn, nil
}

// handlePaymentWebhook takes the payment side's signed notification that an
// order's payment succeeded. Nothing is read or written before the
// signature is verified.
func handlePaymentWebhook(p Payments, v WebhookVerifier, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		body, err := readBody(c)
		if err == nil {
			err = v.Verify(body, c.Request.Header)
		}
		var n order.PaymentNotice
		if err == nil {
			n, err = notice(body, c.GetHeader("webhook-id"))
		}
		var res *order.PaymentResult
		if err == nil {
			res, err = p.ApplyPayment(c.Request.Context(), n)
		}
		if err != nil {
			writeError(c, log, err)
			return
		}
		writeJSON(c, http.StatusOK, res)
	}
}

// handleCheckout answers a shopper's pay in webhook mode: what the shop's
// checkout needs to charge. It changes nothing.
func handleCheckout(p Payments, log *slog.Logger) shopperHandler {
	return func(c *gin.Context, user string) {
		co, err := p.Checkout(c.Request.Context(), user, c.Param("order_id"))
		if err != nil {
			writeError(c, log, err)
			return
		}
		writeJSON(c, http.StatusOK, co)
	}
}

// paymentStatuses are the values of GET /admin/payments?status=.
var paymentStatuses = []string{order.PaymentApplied, order.PaymentRefundDue, order.PaymentMismatch}

// handleListPayments lists the payments recorded, newest first, by status
// and order.
func handleListPayments(p Payments, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		var q order.PaymentQuery
		after, limit, err := pageQuery(c)
		if s, ok := c.GetQuery("status"); ok && err == nil {
			if !slices.Contains(paymentStatuses, s) {
				err = invalid("status must be one of applied, refund_due, mismatch")
			}
			q.Status = s
		}
		if s, ok := c.GetQuery("order_id"); ok && err == nil {
			if s == "" || len(s) > 64 {
				err = invalid("order_id must be an order id")
			}
			q.OrderID = s
		}
		var items []order.Payment
		var next uint64
		if err == nil {
			items, next, err = p.Payments(c.Request.Context(), q, after, limit)
		}
		if err != nil {
			writeError(c, log, err)
			return
		}
		if items == nil {
			items = []order.Payment{}
		}
		writeJSON(c, http.StatusOK, page[order.Payment]{Items: items, NextCursor: encodeCursor(next)})
	}
}
