package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// retry calls try until it succeeds, ctx ends or wait has passed, logging
// every failure so an operator sees what the process is waiting for. wait = 0
// means a single attempt.
func retry(ctx context.Context, log *slog.Logger, what string, wait time.Duration, try func(context.Context) error) error {
	deadline := time.Now().Add(wait)
	delay := 250 * time.Millisecond
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
		if wait == 0 || time.Now().Add(delay).After(deadline) {
			return fmt.Errorf("%s unreachable after %d attempt(s) in %s: %w", what, attempt, wait, err)
		}
		log.Warn("waiting for "+what, "attempt", attempt, "retry_in", delay.String(), "err", err.Error())
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(delay*2, 4*time.Second)
	}
}
