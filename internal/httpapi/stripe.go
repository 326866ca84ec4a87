package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/order"
)

// StripeEvents reads Stripe's signed events (internal/stripepay):
// the payment an event reports, ok false for one not to act on.
type StripeEvents interface {
	Notice(body []byte, signature string) (n order.PaymentNotice, ok bool, err error)
}

// stripeIgnored is the answer to a Stripe event seckill does not act on.
type stripeIgnored struct {
	Ignored bool `json:"ignored"`
}

// handleStripeWebhook takes Stripe's signed events (payment.mode stripe):
// a payment_intent.succeeded of an order's PaymentIntent is applied as any
// payment notification; another event is answered 200, ignored, so that
// Stripe does not send it again. Nothing is read or written before the
// signature is verified.
func handleStripeWebhook(p Payments, ev StripeEvents, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		body, err := readBody(c)
		var n order.PaymentNotice
		ok := false
		if err == nil {
			n, ok, err = ev.Notice(body, c.GetHeader("Stripe-Signature"))
		}
		if err == nil && !ok {
			writeJSON(c, http.StatusOK, stripeIgnored{Ignored: true})
			return
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
