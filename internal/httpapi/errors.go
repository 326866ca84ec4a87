package httpapi

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"
)

// Error is an API error: a stable code, the HTTP status it maps to and a
// human-readable detail. Every error body is {"error": code, "detail": detail}.
type Error struct {
	Status int
	Code   string
	Detail string
}

func (e *Error) Error() string { return e.Code + ": " + e.Detail }

// Errors of the HTTP layer itself.
var (
	errNotFound         = &Error{http.StatusNotFound, "not_found", "no such route"}
	errMethodNotAllowed = &Error{http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed on this route"}
	errInternal         = &Error{http.StatusInternalServerError, "internal", "internal error; see the server log with this request id"}
	errBodyTooLarge     = &Error{http.StatusRequestEntityTooLarge, "invalid_request", "request body too large"}
)

func invalid(detail string) *Error {
	return &Error{http.StatusBadRequest, "invalid_request", detail}
}

// mapping lists, in order, the domain errors and what they become. Domain
// packages own their sentinels; this table is the one place they meet HTTP.
var mapping []struct {
	target error
	to     *Error
}

// register adds a domain sentinel to the mapping table.
func register(target error, status int, code string) {
	mapping = append(mapping, struct {
		target error
		to     *Error
	}{target, &Error{Status: status, Code: code}})
}

// toAPI turns any error into an *Error; unknown errors become a 500 whose
// detail reveals nothing.
func toAPI(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	for _, m := range mapping {
		if errors.Is(err, m.target) {
			return &Error{Status: m.to.Status, Code: m.to.Code, Detail: m.target.Error()}
		}
	}
	return errInternal
}

// writeError sends err as the JSON error body and logs server-side failures
// with the request id.
func writeError(c *gin.Context, log *slog.Logger, err error) {
	ae := toAPI(err)
	if ae.Status >= 500 {
		log.ErrorContext(c.Request.Context(), "request failed", "err", err.Error(),
			"request_id", c.GetString(requestIDKey), "path", c.FullPath())
	}
	if ra, ok := retryAfter(err); ok {
		c.Header("Retry-After", ra)
	}
	c.AbortWithStatusJSON(ae.Status, gin.H{"error": ae.Code, "detail": ae.Detail})
}

// retryAfterError is an error that tells the client when to come back.
type retryAfterError interface{ RetryAfter() string }

func retryAfter(err error) (string, bool) {
	var ra retryAfterError
	if errors.As(err, &ra) {
		return ra.RetryAfter(), true
	}
	return "", false
}
