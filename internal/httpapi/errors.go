package httpapi

import (
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/stock"
)

// Error is an API error: a stable code, the HTTP status it maps to and a
// human-readable detail. Every error body is {"error": code, "detail": detail}.
type Error struct {
	Status     int
	Code       string
	Detail     string
	RetryAfter string // seconds; sent as the Retry-After header when set
	// RequestID, when set, is sent as "request_id": the request id a buy
	// of unknown outcome is retried with to learn it.
	RequestID string
	// expected marks a 5xx the service answers by design (busy under
	// contention, an order not yet written): the client retries, and no
	// operator needs to look, so it is not logged as an error.
	expected bool
}

func (e *Error) Error() string { return e.Code + ": " + e.Detail }

// Errors of the HTTP layer itself.
var (
	errNotFound         = &Error{Status: http.StatusNotFound, Code: "not_found", Detail: "no such route"}
	errMethodNotAllowed = &Error{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed", Detail: "method not allowed on this route"}
	errInternal         = &Error{Status: http.StatusInternalServerError, Code: "internal", Detail: "internal error; see the server log with this request id"}
	errBodyTooLarge     = &Error{Status: http.StatusRequestEntityTooLarge, Code: "invalid_request", Detail: "request body too large"}
	errUnauthorized     = &Error{Status: http.StatusUnauthorized, Code: "unauthorized", Detail: "identify the shopper with the X-User-ID header"}
	errBadUserID        = &Error{Status: http.StatusUnauthorized, Code: "unauthorized", Detail: "X-User-ID must be 1 to 64 letters, digits or - _ . : @"}
	errNoToken          = &Error{Status: http.StatusUnauthorized, Code: "unauthorized", Detail: "send Authorization: Bearer <JWT>"}
	errTokenUser        = &Error{Status: http.StatusUnauthorized, Code: "unauthorized", Detail: "the token's user claim is not a valid shopper id (1-64 letters, digits or - _ . : @)"}
	errAdminToken       = &Error{Status: http.StatusUnauthorized, Code: "unauthorized", Detail: "send Authorization: Bearer <admin token>"}
	errAdminDisabled    = &Error{Status: http.StatusForbidden, Code: "admin_disabled", Detail: "the admin API is off: configure admin.token (SECKILL_ADMIN_TOKEN)"}
	errDrawReaders      = &Error{Status: http.StatusServiceUnavailable, Code: "busy", Detail: "too many readers of the draw right now, retry shortly", RetryAfter: retrySoon, expected: true}
	// errStreamsFull refuses a room stream when the instance has its
	// most open (room.streams): the client polls instead.
	errStreamsFull = &Error{Status: http.StatusTooManyRequests, Code: "too_many_streams",
		Detail: "this instance has its most room streams open: poll GET /api/v1/skus/{id}/queue instead", RetryAfter: "10"}
	// errClientClosed is the answer to a request whose client went away
	// before it was answered, whatever the error: nobody reads it, so
	// nothing is written; the log and the metrics show it under
	// statusClientClosed.
	errClientClosed = &Error{Status: statusClientClosed, Code: "canceled", Detail: "the client closed the request", expected: true}
)

func invalid(detail string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: "invalid_request", Detail: detail}
}

// rule maps the errors match accepts to an API error; domain packages own
// their sentinels, and this table in errors_map.go is the one place they meet
// HTTP.
type rule struct {
	match func(error) bool
	to    Error
}

// toAPI turns any error into an *Error; unknown errors become a 500 whose
// detail reveals nothing.
func toAPI(err error) *Error {
	if err == stock.ErrSoldOut { //nolint:errorlint // the sentinel itself; a wrapped one has its own detail, from the rules
		// The answer of the crowd after a sale sells out, by far the most
		// given: made once.
		return soldOutAnswer
	}
	return fromRules(err)
}

var soldOutAnswer = fromRules(stock.ErrSoldOut)

func fromRules(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	for _, r := range rules {
		if r.match(err) {
			e := r.to
			if e.Status < 500 || e.Status == http.StatusServiceUnavailable && e.Detail == "" {
				e.Detail = err.Error()
			}
			var rl *stock.RateLimitedError
			if e.Code == "rate_limited" && errors.As(err, &rl) {
				e.RetryAfter = strconv.Itoa(max(1, int(math.Ceil(rl.RetryAfter.Seconds()))))
			}
			var uo *order.UnknownOutcomeError
			if errors.As(err, &uo) {
				e.RequestID = uo.RequestID
			}
			return &e
		}
	}
	return errInternal
}

// answerOf is the answer to a request that failed with err: errClientClosed
// when its client went away (the store's call was cancelled with it, and
// says so in its own words: context.Canceled, SQLite's "interrupted", a
// connection closed), toAPI(err) otherwise.
func answerOf(c *gin.Context, err error) *Error {
	if clientGone(c) {
		return errClientClosed
	}
	return toAPI(err)
}

// writeError sends err as the JSON error body and logs server-side failures
// with the request id.
func writeError(c *gin.Context, log *slog.Logger, err error) {
	writeAnswer(c, log, err, answerOf(c, err))
}

// writeAnswer sends ae, the answer to err, as the JSON error body and logs
// at ERROR, with the request id, the failures an operator must look at: a
// 5xx the service does not give by design. To a client that went away it
// writes nothing.
func writeAnswer(c *gin.Context, log *slog.Logger, err error, ae *Error) {
	if !settle(c, log, err, ae) {
		return
	}
	if ae.RequestID != "" {
		writeObject(c, ae.Status, "detail", ae.Detail, "error", ae.Code, "request_id", ae.RequestID)
		return
	}
	writeObject(c, ae.Status, "detail", ae.Detail, "error", ae.Code)
}

// settle does what every answer to a failed request does before its body
// is written — abort the chain, log a failure an operator must look at,
// send Retry-After — and reports whether a body is to be written: not to a
// client that went away. A handler whose answers a payment provider
// prescribes writes ae's status in the provider's format after it.
func settle(c *gin.Context, log *slog.Logger, err error, ae *Error) bool {
	c.Abort()
	if ae == errClientClosed {
		c.Status(statusClientClosed)
		return false
	}
	if ae.Status >= 500 {
		// For the access log's level (answerLevel); the common answers,
		// under 500, are spared the allocation.
		c.Set(answerKey, ae)
		if !ae.expected {
			log.ErrorContext(c.Request.Context(), "request failed", "err", err.Error(), "status", ae.Status,
				"request_id", requestIDOf(c), "route", c.FullPath())
		}
	}
	if ae.RetryAfter != "" {
		c.Header("Retry-After", ae.RetryAfter)
	}
	return true
}
