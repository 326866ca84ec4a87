package lock

import "time"

// Observer receives what a Client or Redlock does, for metrics; package
// lockmetrics implements it with Prometheus. kind is "mutex", "reentrant",
// "read", "write" or "redlock". The methods are called on the caller's and
// the watchdogs' goroutines and must return quickly.
type Observer interface {
	// Acquired reports the end of one TryLock (waited false) or Lock call
	// that took took: err is nil when it obtained the lock, else what the
	// call returned.
	Acquired(kind string, waited bool, took time.Duration, err error)
	// Renewed reports one watchdog renewal and whether it kept the lock.
	Renewed(kind string, ok bool)
	// Lost reports a lease known lost while it was meant to be held.
	Lost(kind string)
}

// kind names the type of lock a lease holds, for the Observer.
type kind uint8

const (
	kindMutex kind = iota
	kindReentrant
	kindRead
	kindWrite
	kindRedlock
	numKinds
)

var kindNames = [numKinds]string{"mutex", "reentrant", "read", "write", "redlock"}

func (k kind) String() string { return kindNames[k] }

// The env reports to its observer, if any; without one these cost a nil check.

func (e *env) acquired(k kind, waited bool, took time.Duration, err error) {
	if e.observer != nil {
		e.observer.Acquired(kindNames[k], waited, took, err)
	}
}

func (e *env) renewal(k kind, ok bool) {
	if e.observer != nil {
		e.observer.Renewed(kindNames[k], ok)
	}
}

func (e *env) lostOne(k kind) {
	if e.observer != nil {
		e.observer.Lost(kindNames[k])
	}
}
