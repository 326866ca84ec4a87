package queue

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A consumer is woken for a task due within its MaxIdle, or for a message
// it cannot read, and sleeps through one due later: it claims again within
// MaxIdle anyway and then plans its sleep from the queue's earliest task.
func TestWakeOnlyForTasksDueWithinMaxIdle(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_800_000_000_000)
	q := &Queue{o: Options{Now: func() time.Time { return now }}}
	c := NewConsumer(q, nil, ConsumerOptions{MaxIdle: 2 * time.Second})
	woken := func(payload string) bool {
		c.wakeFor(payload)
		select {
		case <-c.wake:
			return true
		default:
			return false
		}
	}
	at := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).UnixMilli(), 10) }
	assert.True(t, woken(at(0)), "due now")
	assert.True(t, woken(at(-time.Minute)), "overdue")
	assert.True(t, woken(at(2*time.Second)), "due at MaxIdle")
	assert.False(t, woken(at(2*time.Second+time.Millisecond)), "due after MaxIdle")
	assert.False(t, woken(at(15*time.Minute)), "a payment deadline")
	assert.True(t, woken("not a time"), "unreadable: woken, to be safe")
}
