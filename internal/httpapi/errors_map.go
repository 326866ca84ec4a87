package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/seckill/seckill/internal/auth"
	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/outbox"
	"github.com/seckill/seckill/internal/payment/notify"
	"github.com/seckill/seckill/internal/room"
	"github.com/seckill/seckill/internal/sale"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/storeerr"
	"github.com/seckill/seckill/internal/stripepay"
	"github.com/seckill/seckill/internal/webhook"
)

// is matches an error that is, or wraps, any of targets.
func is(targets ...error) func(error) bool {
	return func(err error) bool {
		for _, t := range targets {
			if errors.Is(err, t) {
				return true
			}
		}
		return false
	}
}

func isA[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}

// retrySoon is the Retry-After, in seconds, of the answers that a retry a
// moment later usually gets through: busy, a state being restored, an order
// not yet confirmed.
const retrySoon = "1"

// rules maps domain errors to HTTP, first match wins. A 5xx the service
// gives by design, which the client retries, is expected: it is not logged
// as an error.
var rules = []rule{
	{isA[*auth.Error], Error{Status: http.StatusUnauthorized, Code: "unauthorized"}},
	{is(stripepay.ErrSignature), Error{Status: http.StatusUnauthorized, Code: "invalid_signature",
		Detail: "the Stripe-Signature header must sign the body with a payment.stripe.webhook_secret secret, within 5 minutes of now"}},
	{is(webhook.ErrSignature), Error{Status: http.StatusUnauthorized, Code: "invalid_signature",
		Detail: "the webhook-id, webhook-timestamp and webhook-signature headers must sign the body with a payment.webhook_secret key, within 5 minutes of now"}},
	// A payment provider's notification (POST /webhooks/alipay,
	// /webhooks/wechatpay) that is not verified: nothing is read or
	// written.
	{is(notify.ErrSignature), Error{Status: http.StatusUnauthorized, Code: "invalid_signature"}},
	{is(notify.ErrUndecryptable), Error{Status: http.StatusUnauthorized, Code: "undecryptable"}},
	{is(notify.ErrMerchant), Error{Status: http.StatusUnprocessableEntity, Code: "wrong_merchant"}},
	{is(order.ErrInvalid, catalog.ErrInvalid, notify.ErrMalformed), Error{Status: http.StatusBadRequest, Code: "invalid_request"}},
	{is(catalog.ErrNotFound), Error{Status: http.StatusNotFound, Code: "unknown_sku"}},
	{is(catalog.ErrDropNotFound), Error{Status: http.StatusNotFound, Code: "unknown_drop"}},
	{is(catalog.ErrInDrop), Error{Status: http.StatusConflict, Code: "sku_in_drop"}},
	{is(catalog.ErrHasRoom), Error{Status: http.StatusConflict, Code: "sku_has_room"}},
	{is(catalog.ErrStarted), Error{Status: http.StatusConflict, Code: "sale_started"}},
	{is(order.ErrNotFound, sale.ErrTaskNotFound, outbox.ErrNotFound), Error{Status: http.StatusNotFound, Code: "not_found"}},
	{is(stock.ErrSoldOut), Error{Status: http.StatusConflict, Code: "sold_out"}},
	{is(stock.ErrLimitExceeded), Error{Status: http.StatusConflict, Code: "limit_exceeded"}},
	{is(order.ErrNotStarted), Error{Status: http.StatusForbidden, Code: "sale_not_started"}},
	{is(room.ErrPassRequired), Error{Status: http.StatusForbidden, Code: "pass_required"}},
	{is(room.ErrPassInvalid, stock.ErrPassSpent), Error{Status: http.StatusForbidden, Code: "pass_invalid"}},
	{is(room.ErrNoRoom), Error{Status: http.StatusNotFound, Code: "no_waiting_room"}},
	// A waiting room's proof of work (docs/shop/waiting-room.md): none
	// given to a first join that needs one, or one that fails a check.
	{is(room.ErrPowRequired), Error{Status: http.StatusForbidden, Code: "pow_required"}},
	{is(room.ErrPowMalformed), Error{Status: http.StatusBadRequest, Code: "pow_malformed"}},
	{is(room.ErrPowForged), Error{Status: http.StatusForbidden, Code: "pow_invalid"}},
	{is(room.ErrPowWrongSKU), Error{Status: http.StatusForbidden, Code: "pow_wrong_sku"}},
	{is(room.ErrPowExpired), Error{Status: http.StatusForbidden, Code: "pow_expired"}},
	{is(room.ErrPowUnsolved), Error{Status: http.StatusForbidden, Code: "pow_unsolved"}},
	{is(room.ErrPowUsed), Error{Status: http.StatusConflict, Code: "pow_used"}},
	{is(room.ErrPowOff), Error{Status: http.StatusNotFound, Code: "no_pow"}},
	{is(room.ErrNoTicket), Error{Status: http.StatusNotFound, Code: "no_ticket"}},
	// A waiting room's priority codes.
	{is(room.ErrCodeMalformed), Error{Status: http.StatusBadRequest, Code: "code_malformed"}},
	{is(room.ErrCodeUnknown), Error{Status: http.StatusForbidden, Code: "code_unknown"}},
	{is(room.ErrCodeUsed), Error{Status: http.StatusConflict, Code: "code_used"}},
	{is(room.ErrCodeAfterTicket), Error{Status: http.StatusConflict, Code: "code_after_ticket"}},
	{is(room.ErrInvalidCodeCount), Error{Status: http.StatusBadRequest, Code: "invalid_request"}},
	{is(room.ErrTooManyCodes), Error{Status: http.StatusConflict, Code: "too_many_codes"}},
	{is(room.ErrNotOpen), Error{Status: http.StatusForbidden, Code: "room_not_open"}},
	{is(room.ErrNotPublished), Error{Status: http.StatusConflict, Code: "draw_not_published"}},
	{is(room.ErrInvalidCommand), Error{Status: http.StatusBadRequest, Code: "invalid_request"}},
	{is(room.ErrRoomClosed), Error{Status: http.StatusConflict, Code: "room_closed", Detail: "the waiting room is closed, for good: nothing changes it any more"}},
	{is(room.ErrTooManyChanges), Error{Status: http.StatusConflict, Code: "too_many_changes"}},
	{is(room.ErrOpenDrop), Error{Status: http.StatusConflict, Code: "open_not_for_drops"}},
	{is(room.ErrSaleOver), Error{Status: http.StatusConflict, Code: "sale_ended", Detail: "the sale has ended: its waiting room changes no more"}},
	{is(room.ErrBusy), Error{Status: http.StatusServiceUnavailable, Code: "busy", Detail: "the waiting room is being drawn, retry shortly", RetryAfter: retrySoon, expected: true}},
	{is(room.ErrStateLost), Error{Status: http.StatusServiceUnavailable, Code: "busy", Detail: "sale state is being restored, retry shortly", RetryAfter: retrySoon, expected: true}},
	{is(order.ErrEnded, stock.ErrSaleEnded), Error{Status: http.StatusForbidden, Code: "sale_ended"}},
	// A payment notification for an order the drain has not written yet:
	// the payment side sends it again and it is applied then.
	{is(order.ErrPaymentEarly), Error{Status: http.StatusServiceUnavailable, Code: "order_queued", RetryAfter: retrySoon, expected: true}},
	{is(order.ErrPaymentMismatch), Error{Status: http.StatusUnprocessableEntity, Code: "payment_mismatch"}},
	// The payment provider, at the checkout: refused (a key, a currency or
	// an amount it does not take: an operator must look) or unreachable.
	{isA[*order.RefusedError], Error{Status: http.StatusBadGateway, Code: "payment_provider_refused",
		Detail: "the payment provider refused to open the payment; the server log says why"}},
	{is(order.ErrProvider), Error{Status: http.StatusServiceUnavailable, Code: "payment_provider_unavailable",
		Detail: "the payment provider did not answer, retry shortly", RetryAfter: "2"}},
	{is(order.ErrQueued), Error{Status: http.StatusConflict, Code: "order_queued", RetryAfter: retrySoon, expected: true}},
	{is(order.ErrClosed), Error{Status: http.StatusConflict, Code: "order_closed"}},
	{is(order.ErrNotCancellable), Error{Status: http.StatusConflict, Code: "order_paid"}},
	{is(catalog.ErrBelowSold, stock.ErrBelowTaken), Error{Status: http.StatusConflict, Code: "below_sold"}},
	{is(catalog.ErrBucketsFixed), Error{Status: http.StatusConflict, Code: "buckets_fixed"}},
	{is(stock.ErrRateLimited), Error{Status: http.StatusTooManyRequests, Code: "rate_limited"}},
	{is(stock.ErrBusy, stock.ErrStale), Error{Status: http.StatusServiceUnavailable, Code: "busy", Detail: "too many buyers right now, retry shortly", RetryAfter: retrySoon, expected: true}},
	{is(stock.ErrStateLost), Error{Status: http.StatusServiceUnavailable, Code: "busy", Detail: "sale state is being restored, retry shortly", RetryAfter: retrySoon, expected: true}},
	// A call cancelled by the server itself (its shutdown); a client that
	// went away is answered errClientClosed before this table is read.
	{is(context.Canceled), Error{Status: http.StatusServiceUnavailable, Code: "canceled", Detail: "the request was canceled", expected: true}},
	// A buy that may have happened: retried with the request id it names,
	// it returns the order if there is one and buys otherwise.
	{isA[*order.UnknownOutcomeError], Error{Status: http.StatusServiceUnavailable, Code: "unavailable",
		Detail: "a backing store did not answer in time: the order may have been placed; retry with this request_id to learn the outcome", RetryAfter: "2"}},
	{storeerr.Unavailable, Error{Status: http.StatusServiceUnavailable, Code: "unavailable", Detail: "a backing store is unavailable, retry shortly", RetryAfter: "2"}},
}
