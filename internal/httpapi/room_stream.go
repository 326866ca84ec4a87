package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/room"
	"github.com/seckill/seckill/internal/streamwrite"
)

// RoomStreams follows shoppers' statuses in waiting rooms, for their
// streams (room.Board through an adapter).
type RoomStreams interface {
	// Follow starts following user's status in the room of sku; it fails
	// as a look does (room.ErrNoTicket, room.ErrNoRoom, ...).
	Follow(ctx context.Context, sku uint64, user string) (Follower, error)
}

// Follower is one shopper's followed status (room.Follower).
type Follower interface {
	// Next waits for the next status to tell: false after idle with
	// nothing to tell.
	Next(ctx context.Context, idle time.Duration) (room.Status, bool, error)
}

// streamHeartbeat is how often an idle stream sends a comment, so that
// proxies keep the connection open.
const streamHeartbeat = 15 * time.Second

// streamRetryMS is the reconnection delay a stream gives EventSource.
const streamRetryMS = "3000"

// streams are the room streams open on this instance: at most max, one per
// shopper and SKU, a shopper's new stream replacing their old one (a page
// reloaded, a connection that died without the server knowing).
type streams struct {
	max  int
	mu   sync.Mutex
	open map[streamKey]*streamSlot
}

// streamKey names a shopper's stream: a shopper id is at most 64
// characters, and the map at most max entries.
type streamKey struct {
	sku  uint64
	user string
}

type streamSlot struct{ end context.CancelFunc }

// take opens a slot for user's stream of sku, ending the one they had:
// false when the instance has its most streams.
func (s *streams) take(k streamKey, end context.CancelFunc) (*streamSlot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.open[k]
	if !ok && len(s.open) >= s.max {
		return nil, false
	}
	if ok {
		old.end()
	}
	slot := &streamSlot{end: end}
	s.open[k] = slot
	return slot, true
}

// release frees slot, unless a newer stream of its shopper took it.
func (s *streams) release(k streamKey, slot *streamSlot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[k] == slot {
		delete(s.open, k)
	}
}

// handleRoomStream streams a shopper's status in a SKU's waiting room as
// Server-Sent Events ("status" events, the data a look answers) until it
// is closed, the shopper's client goes, a newer stream of theirs replaces
// it, or the server shuts down (closing). Refused (429 too_many_streams)
// when the instance has its most streams: the client polls instead.
func handleRoomStream(closing context.Context, f RoomStreams, open *streams, writeTimeout time.Duration, log *slog.Logger) shopperHandler {
	return func(c *gin.Context, user string) {
		id, err := pathID(c, "id")
		if err != nil {
			writeError(c, log, err)
			return
		}
		ctx, end := context.WithCancel(c.Request.Context())
		defer end()
		k := streamKey{id, user}
		slot, ok := open.take(k, end)
		if !ok {
			writeError(c, log, errStreamsFull)
			return
		}
		defer open.release(k, slot)
		stopClosing := context.AfterFunc(closing, end)
		defer stopClosing()
		fol, err := f.Follow(ctx, id, user)
		if err != nil {
			writeError(c, log, err)
			return
		}
		stream(ctx, c, fol, writeTimeout, log)
	}
}

// stream writes fol's statuses to c until ctx ends, a closed status is
// sent, or a write fails. A stream outlives the server's read and write
// timeouts, which are for requests and answers: each event has a write
// deadline of its own instead, so that a client that does not read in
// time is dropped, and the end of ctx ends a write in progress.
func stream(ctx context.Context, c *gin.Context, fol Follower, writeTimeout time.Duration, log *slog.Logger) {
	dl := streamwrite.New(c.Writer, writeTimeout)
	stop := context.AfterFunc(ctx, dl.Expire)
	defer func() {
		stop()
		dl.Finish()
	}()
	h := c.Writer.Header()
	h["Content-Type"] = []string{"text/event-stream"}
	h["Cache-Control"] = []string{"no-store"}
	h["X-Accel-Buffering"] = []string{"no"} // nginx: pass each event on at once
	c.Status(http.StatusOK)
	w := c.Writer
	if !dl.Send(w, []byte("retry: "+streamRetryMS+"\n\n")) {
		return
	}
	var buf []byte // the event being written, kept for the next
	for {
		st, ok, err := fol.Next(ctx, streamHeartbeat)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				// The stream ends; the client looks again (polls, or
				// connects again) and meets the error there.
				log.DebugContext(c.Request.Context(), "room stream", "err", err.Error(), "request_id", requestIDOf(c))
			}
			return
		case ok:
			data, err := json.Marshal(st) //nolint:gosec // G117: the pass is this shopper's own, sent to them as a look sends it
			if err != nil {
				return
			}
			buf = append(append(append(buf[:0], "event: status\ndata: "...), data...), "\n\n"...)
		default:
			buf = append(buf[:0], ": ping\n\n"...)
		}
		if !dl.Send(w, buf) {
			return
		}
		if ok && st.Status == room.Closed {
			return
		}
	}
}
