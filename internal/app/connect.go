package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/seckill/seckill/internal/backoff"
)

// connectBackoff spaces the attempts to reach a store at start: 250ms
// doubling to 4s.
var connectBackoff = backoff.Exponential{Min: 250 * time.Millisecond, Max: 4 * time.Second}

// permanentError is a failure that waiting does not cure, such as a server
// certificate that is not trusted: retry returns it at once.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// permanent marks err as a failure that waiting does not cure.
func permanent(err error) error { return permanentError{err} }

// retry calls try until it succeeds, ctx ends or wait has passed, logging
// every failure so an operator sees what the process is waiting for. wait = 0
// means a single attempt. An error marked permanent ends it at once.
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
		var pe permanentError
		if errors.As(err, &pe) {
			return fmt.Errorf("%s: %w", what, pe.error)
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
