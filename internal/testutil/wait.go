package testutil

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Eventually polls cond every 5ms until it holds, and fails the test with
// "gave up waiting for <what>" when it still does not after limit. It
// asserts nothing about how long the wait takes: limit is a generous bound
// for a loaded machine, not a timing claim.
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

// ClosedWithin waits for ch to be closed (or to deliver a value) and fails
// the test when that does not happen within limit.
func ClosedWithin(t testing.TB, limit time.Duration, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(limit):
		t.Fatalf("gave up waiting for %s (%s)", what, limit)
	}
}

// Context returns a context that is cancelled after limit or when the test
// ends, whichever comes first.
func Context(t testing.TB, limit time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	return ctx
}

// Repeat runs body over and over in n goroutines, as background load for
// a test, until the returned stop is called; a goroutine whose body returns
// false stops early. stop waits for the goroutines to return and may be
// called more than once; it is also called when the test ends.
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

// SkipShort skips the test under go test -short, saying why it is not a
// short test (for example "starts seckill processes").
func SkipShort(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip(why)
	}
}
