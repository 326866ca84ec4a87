package locktest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Context returns a context cancelled after limit or when the test ends.
func Context(t testing.TB, limit time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	return ctx
}

// Eventually polls cond every 5ms until it holds, and fails the test when it
// still does not after limit: a generous bound, not a timing claim.
func Eventually(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s (%s)", what, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ClosedWithin waits for ch to be closed and fails the test when that does
// not happen within limit.
func ClosedWithin(t testing.TB, limit time.Duration, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(limit):
		t.Fatalf("gave up waiting for %s (%s)", what, limit)
	}
}

// Repeat runs body over and over in n goroutines until the returned stop is
// called (also when the test ends); a body that returns false stops early.
func Repeat(t testing.TB, n int, body func() bool) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if !body() {
					return
				}
			}
		})
	}
	var once sync.Once
	stop = func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
	t.Cleanup(stop)
	return stop
}

// Clock is a settable clock for tests.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Commands is a go-redis hook that records the arguments of every command
// sent through the client it is added to, pipelined ones included.
type Commands struct {
	mu   sync.Mutex
	cmds [][]any
}

// DialHook records nothing.
func (h *Commands) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records the command.
func (h *Commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.record(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook records each command of the pipeline.
func (h *Commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.record(cmds...)
		return next(ctx, cmds)
	}
}

func (h *Commands) record(cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cmds {
		h.cmds = append(h.cmds, c.Args())
	}
}

// Take returns the commands recorded since the last Take.
func (h *Commands) Take() [][]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.cmds
	h.cmds = nil
	return c
}
