// Package backoff computes capped exponential retry delays: the schedule of
// every retry loop of the service, from a connection's milliseconds to a
// queue task's minutes. (The public package lock keeps its own copy, so that
// it imports nothing of seckill.)
//
// A schedule is a value, and the delay before retry n is a pure function of
// n: nothing to allocate, reset or share between goroutines, and a loop that
// restarts (or a task whose attempt count is stored elsewhere) picks up
// where it was.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Exponential is the schedule d(n) = min(Max, Min·2ⁿ) for retries
// n = 0, 1, 2, ... Min must be positive; a Max below Min counts as Min.
type Exponential struct {
	Min time.Duration // delay before the first retry
	Max time.Duration // cap
}

// Delay returns d(n); a negative n counts as 0. It never overflows.
func (e Exponential) Delay(n int) time.Duration {
	d := max(e.Max, e.Min)
	if n < 0 {
		n = 0
	}
	if n < 63 {
		if x := e.Min << n; x>>n == e.Min && x < d {
			d = x
		}
	}
	return d
}

// Jittered returns a delay drawn uniformly from [d/2, d] with d = Delay(n):
// retries that failed together spread out, and none waits less than half
// the schedule.
func (e Exponential) Jittered(n int) time.Duration {
	d := e.Delay(n)
	half := d / 2
	return half + rand.N(d-half+1)
}
