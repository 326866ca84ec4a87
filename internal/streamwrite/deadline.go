// Package streamwrite bounds the writes of a long-lived HTTP answer (a
// Server-Sent Events stream): each event has a write deadline of its own,
// so that a client that stops reading is dropped rather than holding the
// server, and the stream's end makes any write still stuck fail at once.
package streamwrite

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// Deadline is the write deadline of one stream's connection: timeout from
// the start of each event, and now once the stream ends.
type Deadline struct {
	rc      *http.ResponseController
	timeout time.Duration

	mu    sync.Mutex
	ended bool
}

// New returns the deadline of the stream written to w, timeout per event,
// and lifts the read deadline the server set for the request: a stream
// reads nothing more, and outlives the server's read and write timeouts.
func New(w http.ResponseWriter, timeout time.Duration) *Deadline {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	return &Deadline{rc: rc, timeout: timeout}
}

// Extend gives the next event timeout; false once the stream has ended.
func (d *Deadline) Extend() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended {
		return false
	}
	err := d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	return err == nil || errors.Is(err, http.ErrNotSupported)
}

// Sender is where a stream's events go: the answer's writer.
type Sender interface {
	io.Writer
	http.Flusher
}

// Send writes event to w within the next event's deadline and flushes it;
// false once the stream has ended or the write failed (a client that did
// not take it in time).
func (d *Deadline) Send(w Sender, event []byte) bool {
	if !d.Extend() {
		return false
	}
	if _, err := w.Write(event); err != nil {
		return false
	}
	w.Flush()
	return true
}

// Expire ends the stream: every write from now on, the end of the answer
// included, fails at once.
func (d *Deadline) Expire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.ended {
		d.ended = true
		_ = d.rc.SetWriteDeadline(time.Now())
	}
}

// Finish ends the stream as its handler returns, leaving the deadline of
// its last event for the end of the answer.
func (d *Deadline) Finish() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ended = true
}
