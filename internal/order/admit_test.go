package order

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/stock"
)

type limiterFunc func(key string) (bool, time.Duration, error)

func (f limiterFunc) Allow(_ context.Context, key string) (bool, time.Duration, error) { return f(key) }

// The per-address budget refuses with the time to wait, and a limiter that
// cannot count lets the request through: the sale does not stop with it.
func TestPerAddressBudget(t *testing.T) {
	var keys []string
	verdict := func(ok bool, err error) limiterFunc {
		return func(key string) (bool, time.Duration, error) {
			keys = append(keys, key)
			return ok, 1500 * time.Millisecond, err
		}
	}
	ctx := t.Context()
	in := PlaceInput{SKU: 1, Qty: 1, Client: "192.0.2.7"}
	svc := func(l Limiter) *Service {
		return NewService(nil, nil, nil, nil, nil, nil, Options{PerAddress: l, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}

	err := svc(verdict(false, nil)).admit(ctx, in)
	var rl *stock.RateLimitedError
	require.True(t, errors.As(err, &rl), "%v", err)
	assert.Equal(t, 1500*time.Millisecond, rl.RetryAfter)
	assert.Equal(t, []string{"ip:192.0.2.7"}, keys)

	assert.NoError(t, svc(verdict(true, nil)).admit(ctx, in))
	assert.NoError(t, svc(verdict(false, errors.New("redis down"))).admit(ctx, in), "an outage lets the request through")
	assert.NoError(t, svc(nil).admit(ctx, in), "no limiter")
}
