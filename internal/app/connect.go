package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/seckill/seckill/internal/backoff"
)

// connectBackoff spaces the attempts to reach a store at start: 250ms
// doubling to 4s.
var connectBackoff = backoff.Exponential{Min: 250 * time.Millisecond, Max: 4 * time.Second}

// retry calls try until it succeeds, ctx ends or wait has passed, logging
// every failure so an operator sees what the process is waiting for. wait = 0
// means a single attempt.
func retry(ctx context.Context, log *slog.Logger, what string, wait time.Duration, try func(context.Context) error) error {
	deadline := time.Now().Add(wait)
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := try(actx)
		cancel()
		if err == nil {
			if attempt > 1 {
				log.Info(what+" reachable", "attempts", attempt)
			}
			return nil
		}
		delay := connectBackoff.Delay(attempt - 1)
		if wait == 0 || time.Now().Add(delay).After(deadline) {
			return fmt.Errorf("%s unreachable after %d attempt(s) in %s: %w", what, attempt, wait, err)
		}
		log.Warn("waiting for "+what, "attempt", attempt, "retry_in", delay.String(), "err", err.Error())
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(delay):
		}
	}
}
