// Package ratelimit limits request rates per key (a shopper, a client
// address) with a generic cell rate algorithm kept in Redis, so every
// instance shares one budget per key. It wraps github.com/go-redis/redis_rate.
package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Limiter allows perSecond requests per key with bursts of burst.
type Limiter struct {
	l      *redis_rate.Limiter
	prefix string
	limit  redis_rate.Limit
}

// New returns a limiter whose keys start with prefix.
func New(rdb redis.UniversalClient, prefix string, perSecond, burst int) *Limiter {
	return &Limiter{
		l:      redis_rate.NewLimiter(rdb),
		prefix: prefix,
		limit:  redis_rate.Limit{Rate: perSecond, Burst: max(burst, perSecond, 1), Period: time.Second},
	}
}

// Allow takes one request from key's budget. When the budget is spent it
// returns false and how long until the next request is allowed.
func (l *Limiter) Allow(ctx context.Context, key string) (bool, time.Duration, error) {
	res, err := l.l.Allow(ctx, l.prefix+key, l.limit)
	if err != nil {
		return true, 0, fmt.Errorf("ratelimit: %w", err)
	}
	return res.Allowed > 0, res.RetryAfter, nil
}
