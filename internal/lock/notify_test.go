package lock

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func pending(w *waiter) bool {
	select {
	case <-w.c:
		w.c <- struct{}{} // put it back
		return true
	default:
		return false
	}
}

// TestNotifierWakesOne: a release wakes one waiter, the one waiting longest
// without a pending wake-up; "a" wakes all; a wake-up left unused by a waiter
// that leaves goes to the next one.
func TestNotifierWakesOne(t *testing.T) {
	n := newNotifier(nil)
	n.closed = true // no pub/sub connection in this unit test
	mk := func() *waiter { return &waiter{channel: "c", c: make(chan struct{}, 1)} }
	w1, w2, w3 := mk(), mk(), mk()
	n.chans["c"] = []*waiter{w1, w2, w3}

	n.wake("c", false)
	assert.Equal(t, []bool{true, false, false}, []bool{pending(w1), pending(w2), pending(w3)})
	n.wake("c", false)
	assert.Equal(t, []bool{true, true, false}, []bool{pending(w1), pending(w2), pending(w3)})

	// w2 leaves without using its wake-up: w3 gets it.
	n.remove(w2)
	assert.True(t, pending(w3))
	assert.Equal(t, 2, n.count("c"))

	<-w1.c
	<-w3.c
	n.wake("c", true)
	assert.True(t, pending(w1))
	assert.True(t, pending(w3))

	n.remove(w1)
	n.remove(w3)
	assert.Zero(t, n.count("c"))
	n.wake("nobody", false) // no waiters: nothing happens
}
