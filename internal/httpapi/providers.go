package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/payment/notify"
)

// NotificationVerifier verifies a payment provider's notification, its body
// and headers, and says what it reports (internal/payment/alipay,
// internal/payment/wechatpay). Its errors wrap notify's sentinels.
type NotificationVerifier interface {
	Verify(body []byte, h http.Header) (notify.Notification, error)
}

// applyNotification verifies a provider's notification and applies the
// payment it reports; nil when the payment is recorded, was recorded
// before (a replay, including a refund_due one), or the notification is
// verified and reports no payment (a trade still waiting or closed,
// another event: acknowledged, nothing written). Nothing is read or
// written before the notification is verified.
func applyNotification(c *gin.Context, p Payments, v NotificationVerifier, log *slog.Logger, provider string) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	n, err := v.Verify(body, c.Request.Header)
	if err != nil {
		return err
	}
	if !n.Paid {
		// State is bounded and from a fixed alphabet (notify.State).
		log.DebugContext(c.Request.Context(), "payment notification acknowledged: no payment",
			"provider", provider, "state", n.State, "request_id", requestIDOf(c))
		return nil
	}
	_, err = p.ApplyPayment(c.Request.Context(), order.PaymentNotice{WebhookID: n.ID, PaymentID: n.PaymentID,
		PaymentReference: n.Reference, AmountCents: n.AmountCents, Currency: n.Currency})
	return err
}
