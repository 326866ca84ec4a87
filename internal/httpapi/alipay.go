package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"
)

// Alipay's answers: it stops sending a notification only when the answer's
// body is success, and retries otherwise (over about a day).
const (
	alipaySuccess = "success"
	alipayFail    = "fail"
)

var textPlain = []string{"text/plain; charset=utf-8"}

// handleAlipay takes Alipay's asynchronous notification of a trade (payment.mode
// alipay): 200 success when the payment is recorded, was recorded before,
// or the notification reports no payment; otherwise fail, with the status
// the error table gives (401 not signed by Alipay, 422 another app or a
// payment that does not match its order, 404 no such reference, 503 an
// order not yet confirmed), so that Alipay sends it again.
func handleAlipay(p Payments, v NotificationVerifier, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := applyNotification(c, p, v, log, "alipay"); err != nil {
			ae := answerOf(c, err)
			if settle(c, log, err, ae) {
				writeText(c, ae.Status, alipayFail)
			}
			return
		}
		writeText(c, http.StatusOK, alipaySuccess)
	}
}

func writeText(c *gin.Context, status int, body string) {
	c.Status(status)
	c.Writer.Header()["Content-Type"] = textPlain
	_, _ = c.Writer.WriteString(body)
}
