package httpapi

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/stock"
)

func is(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }

// rules maps domain errors to HTTP, first match wins.
var rules = []rule{
	{is(order.ErrInvalid), Error{Status: http.StatusBadRequest, Code: "invalid_request"}},
	{is(catalog.ErrInvalid), Error{Status: http.StatusBadRequest, Code: "invalid_request"}},
	{is(catalog.ErrNotFound), Error{Status: http.StatusNotFound, Code: "unknown_sku"}},
	{is(order.ErrNotFound), Error{Status: http.StatusNotFound, Code: "not_found"}},
	{is(order.ErrTaskNotFound), Error{Status: http.StatusNotFound, Code: "not_found"}},
	{is(stock.ErrSoldOut), Error{Status: http.StatusConflict, Code: "sold_out"}},
	{is(stock.ErrLimitExceeded), Error{Status: http.StatusConflict, Code: "limit_exceeded"}},
	{is(order.ErrLimitExceeded), Error{Status: http.StatusConflict, Code: "limit_exceeded"}},
	{is(order.ErrNotStarted), Error{Status: http.StatusForbidden, Code: "sale_not_started"}},
	{is(order.ErrEnded), Error{Status: http.StatusForbidden, Code: "sale_ended"}},
	{is(order.ErrQueued), Error{Status: http.StatusConflict, Code: "order_queued", RetryAfter: "1"}},
	{is(order.ErrClosed), Error{Status: http.StatusConflict, Code: "order_closed"}},
	{is(order.ErrNotCancellable), Error{Status: http.StatusConflict, Code: "order_paid"}},
	{is(catalog.ErrBelowSold), Error{Status: http.StatusConflict, Code: "below_sold"}},
	{is(stock.ErrBelowTaken), Error{Status: http.StatusConflict, Code: "below_sold"}},
	{is(stock.ErrRateLimited), Error{Status: http.StatusTooManyRequests, Code: "rate_limited"}},
	{is(stock.ErrBusy), Error{Status: http.StatusServiceUnavailable, Code: "busy", Detail: "too many buyers right now, retry shortly", RetryAfter: stock.RetryAfter}},
	{is(stock.ErrStale), Error{Status: http.StatusServiceUnavailable, Code: "busy", Detail: "too many buyers right now, retry shortly", RetryAfter: stock.RetryAfter}},
	{is(stock.ErrStateLost), Error{Status: http.StatusServiceUnavailable, Code: "busy", Detail: "sale state is being restored, retry shortly", RetryAfter: stock.RetryAfter}},
	// The client went away; nobody reads this answer, but the outcome is
	// counted as what it was rather than as an internal error.
	{is(context.Canceled), Error{Status: http.StatusServiceUnavailable, Code: "canceled", Detail: "the request was canceled"}},
	{unavailable, Error{Status: http.StatusServiceUnavailable, Code: "unavailable", Detail: "a backing store is unavailable, retry shortly", RetryAfter: "2"}},
}

// unavailable matches a store that cannot be reached, did not answer in time,
// dropped the connection or refuses work for now (Redis loading, a replica
// or a failover under way, out of memory under noeviction): the client
// should retry, and internals stay in the log.
func unavailable(err error) bool {
	var ne net.Error
	switch {
	case errors.As(err, &ne), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, mysql.ErrInvalidConn),
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted), errors.Is(err, redis.ErrClosed):
		return true
	}
	return redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsMasterDownError(err) ||
		redis.IsClusterDownError(err) || redis.IsTryAgainError(err) || redis.IsMaxClientsError(err) ||
		redis.IsOOMError(err)
}
