// Package storeerr tells the failures of Redis and SQL that a client should
// retry — the store could not be reached, did not answer in time, dropped
// the connection, or refuses work for now — from every other error, so
// that the layers above recognise them without importing the drivers.
package storeerr

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/replica"
)

// Unavailable reports whether err is such a failure: a write not yet on
// enough replicas (replica.ErrNotReplicated), a network error or
// timeout, a connection refused, reset or closed, a pool exhausted, or a
// Redis that is loading, read-only (a replica, or a failover under way),
// answering with another node for a slot (MOVED, ASK: a Cluster failover),
// without a reachable master or cluster, over its client limit or out of
// memory under noeviction; a connection go-redis closed under a command
// (a failover closes the old master's connections); or a MySQL over its
// connection limit (1040) or short of resources for one (1203, 1135), or
// that rolled a transaction back for a deadlock (1213) or a lock wait
// timed out (1205; the transaction then rolls back as it returns), or a
// TiDB that reports a transaction to retry whole (tidbRetry).
func Unavailable(err error) bool {
	var ne net.Error
	switch {
	case errors.Is(err, replica.ErrNotReplicated), errors.As(err, &ne), errors.Is(err, context.DeadlineExceeded),
		connError(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, mysql.ErrInvalidConn),
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted), errors.Is(err, redis.ErrClosed):
		return true
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) && (slices.Contains([]uint16{1040, 1203, 1135, 1213, 1205}, me.Number) || slices.Contains(tidbRetry, me.Number)) {
		return true
	}
	if _, moved := redis.IsMovedError(err); moved {
		return true // a slot moved in a failover; the next try follows it
	}
	if _, ask := redis.IsAskError(err); ask {
		return true
	}
	return redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsMasterDownError(err) ||
		redis.IsClusterDownError(err) || redis.IsTryAgainError(err) || redis.IsMaxClientsError(err) ||
		redis.IsOOMError(err)
}

// tidbRetry are TiDB's own errors after which its documentation says to
// retry the transaction (its error codes page): a write conflict (8002,
// 8005, 9007), a commit that failed (8022), the schema changed under it
// (8028), PD or TiKV timing out, busy, or a region unavailable (9001 to
// 9005). No MySQL or MariaDB error has these numbers.
var tidbRetry = []uint16{8002, 8005, 8022, 8028, 9001, 9002, 9003, 9004, 9005, 9007}

// LockHeld reports whether err is TiDB's answer to GET_LOCK on a lock
// another session holds, where MySQL answers 0: error 1105 saying the lock
// wait timed out or its retries ran out. No MySQL or MariaDB GET_LOCK
// answers so.
func LockHeld(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1105 && strings.Contains(me.Message, "lock")
}

// connErrors are the texts of go-redis's own connection failures (its
// pool's, kept in an internal package, and its client's, not exported): a
// connection closed, by a failover or a pool hook, while a command was
// setting it up or using it, or left unusable mid-reply. Their values
// cannot be compared, so each is known by its text, which
// TestConnErrorsAreGoRedis pins to the go-redis in go.mod. A text ending
// in ": " is a prefix.
var connErrors = []string{
	"invalid state transition",
	"state machine is closed",
	"state transition timeout",
	"unexpected read from socket",
	"redis: timed out trying to mark connection as unusable",
	"redis: connection pool has no free turn",
	"redis: connection not available",
	"redis: connection not available for write operation",
	"redis: connection is not usable",
	"redis: connection unusable (reply stream desynchronized)",
	"connection in unexpected state after initialization: ",
}

// connError reports whether err, or an error it wraps, is one of
// connErrors itself (not merely a message that mentions one).
func connError(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	if slices.ContainsFunc(connErrors, func(text string) bool {
		return msg == text || strings.HasSuffix(text, ": ") && strings.HasPrefix(msg, text)
	}) {
		return true
	}
	switch e := err.(type) { //nolint:errorlint // walks the chain itself, one error at a time
	case interface{ Unwrap() error }:
		return connError(e.Unwrap())
	case interface{ Unwrap() []error }:
		return slices.ContainsFunc(e.Unwrap(), connError)
	}
	return false
}
