// Package testutil holds the helpers the test suites share: polling for a
// condition, contexts bound to a test, a settable clock, a goroutine-safe
// log sink, requests to a seckill instance read as raw answers, and
// building and running the seckill binary as a separate process. It is
// imported by tests only.
//
// Every helper that takes a testing.TB marks itself with t.Helper, so a
// failure is reported at the caller's line.
package testutil
