package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"
)

// wechatPayFail is the code of WeChat Pay's error answer, {"code":"FAIL",
// "message":…}.
const wechatPayFail = "FAIL"

// handleWeChatPay takes WeChat Pay's API v3 notification of a payment
// (payment.mode wechatpay): 204 and no body when the payment is recorded,
// was recorded before, or the notification reports no payment; otherwise
// {"code":"FAIL","message":"<error>: <detail>"} with the status the error
// table gives (401 not signed by WeChat Pay or not decrypted, 422 another
// merchant or a payment that does not match its order, 404 no such
// reference, 503 an order not yet confirmed), and WeChat Pay sends it
// again.
func handleWeChatPay(p Payments, v NotificationVerifier, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := applyNotification(c, p, v, log, "wechatpay"); err != nil {
			ae := answerOf(c, err)
			if settle(c, log, err, ae) {
				writeObject(c, ae.Status, "code", wechatPayFail, "message", ae.Code+": "+ae.Detail)
			}
			return
		}
		c.Status(http.StatusNoContent)
		c.Writer.WriteHeaderNow()
	}
}
