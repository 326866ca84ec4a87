package stock

import (
	"errors"
	"time"
)

// Outcomes of a buy other than acceptance. The HTTP layer maps each to a
// status code.
var (
	ErrSoldOut       = errors.New("sold out")
	ErrLimitExceeded = errors.New("per-user limit exceeded")
	// ErrSaleEnded: the sale's end, as Redis holds it, has passed (it may
	// have been ended early while an instance's cached window is older).
	ErrSaleEnded = errors.New("the sale has ended")
	// ErrPassSpent: the waiting room pass the buy carried was spent by an
	// earlier buy, or has expired.
	ErrPassSpent = errors.New("the waiting room pass is spent or expired")
	// ErrBusy: the SKU's lock was not obtained within its wait, or the SKU's
	// state is being rebuilt. The request may be retried shortly.
	ErrBusy = errors.New("busy, retry shortly")
	// ErrStateLost: the SKU's Redis state is missing (Redis lost its data);
	// a rebuild from SQL has been started.
	ErrStateLost = errors.New("stock state missing in redis")
	// ErrStale: the lock used for the write was lost or overtaken by a newer
	// holder (its fencing number is older than one already used).
	ErrStale  = errors.New("stale lock holder")
	ErrClosed = errors.New("stock: seller closed")
)

// ErrRateLimited means a shopper's (or a client address's) request budget
// is spent. Errors carrying it are *RateLimitedError.
var ErrRateLimited = errors.New("too many requests")

// RateLimitedError refuses a request over its budget and says when the next
// one is allowed.
type RateLimitedError struct {
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return ErrRateLimited.Error() + ": retry in " + e.RetryAfter.Round(time.Millisecond).String()
}

// Is makes errors.Is(err, ErrRateLimited) hold.
func (e *RateLimitedError) Is(target error) bool { return target == ErrRateLimited }
