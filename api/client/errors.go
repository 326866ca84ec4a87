package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// The refusals of a buy that a shop front tells apart, and the 503s Buy
// retries; errors.Is(err, ErrSoldOut) asks whether an *APIError is one.
var (
	ErrInvalidRequest = errors.New("seckill: invalid request")
	ErrUnauthorized   = errors.New("seckill: unauthorized")
	ErrUnknownSKU     = errors.New("seckill: unknown SKU")
	ErrSoldOut        = errors.New("seckill: sold out")
	ErrLimitExceeded  = errors.New("seckill: per-user limit exceeded")
	ErrSaleNotStarted = errors.New("seckill: sale not started")
	ErrSaleEnded      = errors.New("seckill: sale ended")
	ErrPassRequired   = errors.New("seckill: waiting room pass required")
	ErrPassInvalid    = errors.New("seckill: waiting room pass invalid")
	ErrRateLimited    = errors.New("seckill: rate limited")
	ErrBusy           = errors.New("seckill: busy")
	ErrUnavailable    = errors.New("seckill: unavailable")
)

var sentinels = map[ErrorError]error{
	ErrorErrorInvalidRequest: ErrInvalidRequest,
	ErrorErrorUnauthorized:   ErrUnauthorized,
	ErrorErrorUnknownSku:     ErrUnknownSKU,
	ErrorErrorSoldOut:        ErrSoldOut,
	ErrorErrorLimitExceeded:  ErrLimitExceeded,
	ErrorErrorSaleNotStarted: ErrSaleNotStarted,
	ErrorErrorSaleEnded:      ErrSaleEnded,
	ErrorErrorPassRequired:   ErrPassRequired,
	ErrorErrorPassInvalid:    ErrPassInvalid,
	ErrorErrorRateLimited:    ErrRateLimited,
	ErrorErrorBusy:           ErrBusy,
	ErrorErrorUnavailable:    ErrUnavailable,
}

// APIError is an answer of the API that is not the one asked for.
type APIError struct {
	StatusCode int
	// Code is the answer's stable error code ("sold_out"); empty when its
	// body is not the API's error object (a proxy's page).
	Code ErrorError
	// Detail says what is wrong, for a person.
	Detail string
	// RequestID is the request id to retry a buy with, in a 503
	// unavailable answer to it.
	RequestID string
	// RetryAfter is the answer's Retry-After, 0 without one.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("seckill: %d %s", e.StatusCode, e.Detail)
	}
	return fmt.Sprintf("seckill: %d %s: %s", e.StatusCode, e.Code, e.Detail)
}

// Unwrap returns the sentinel of the code (ErrSoldOut for sold_out), or nil
// for a code without one.
func (e *APIError) Unwrap() error { return sentinels[e.Code] }

func newAPIError(resp *http.Response, body []byte) *APIError {
	e := &APIError{StatusCode: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	var b Error
	if json.Unmarshal(body, &b) == nil && b.Error != "" {
		e.Code, e.Detail = b.Error, b.Detail
		if b.RequestId != nil {
			e.RequestID = *b.RequestId
		}
		return e
	}
	e.Detail = http.StatusText(resp.StatusCode)
	return e
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(s, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// OutcomeUnknownError is a buy that may have been placed: Buy stopped
// (its attempts used, or its context done) after an attempt that was
// answered 503 unavailable or not at all, and no later answer settled it. A
// Buy of the same shopper and SKU WithRequestID(RequestID) returns the order
// if there is one, and buys otherwise; an order left unpaid expires at its
// payment deadline.
type OutcomeUnknownError struct {
	RequestID string
	// Err is the last attempt's error: an *APIError, or why there was no
	// answer.
	Err error
}

func (e *OutcomeUnknownError) Error() string {
	return fmt.Sprintf("seckill: the buy's outcome is unknown (retry with request id %s): %v", e.RequestID, e.Err)
}

func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// settles reports whether err is an answer the API gives only once it has
// looked the request id up (a refusal of the SKU, its sale or the shopper's
// limit), so that no order was made by an earlier attempt.
func settles(err error) bool {
	var e *APIError
	if !errors.As(err, &e) {
		return false
	}
	switch e.StatusCode {
	case http.StatusForbidden, http.StatusNotFound, http.StatusConflict:
		return true
	}
	return false
}
