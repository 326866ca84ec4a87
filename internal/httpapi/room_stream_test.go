package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/room"
)

// stubStreams follows every shopper but "nobody": "flood" is told 64 KB
// statuses as fast as it takes them, the others a small one every 10 ms.
// ended has, per shopper, a channel closed when their stream ends.
type stubStreams struct {
	mu    sync.Mutex
	ended map[string]chan struct{}
}

func (s *stubStreams) Follow(ctx context.Context, _ uint64, user string) (Follower, error) {
	if user == "nobody" {
		return nil, room.ErrNoTicket
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.ended[user] = done
	s.mu.Unlock()
	context.AfterFunc(ctx, func() { close(done) })
	f := &stubFollower{every: 10 * time.Millisecond}
	if user == "flood" {
		f.every, f.reason = 0, strings.Repeat("x", 64<<10)
	}
	return f, nil
}

func (s *stubStreams) endedOf(user string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended[user]
}

type stubFollower struct {
	every  time.Duration
	reason string
	n      int64
}

func (f *stubFollower) Next(ctx context.Context, _ time.Duration) (room.Status, bool, error) {
	select {
	case <-ctx.Done():
		return room.Status{}, false, ctx.Err()
	case <-time.After(f.every):
	}
	f.n++
	return room.Status{Status: room.Waiting, Position: f.n, Ahead: f.n, Reason: f.reason}, true, nil
}

// statusEvents counts the status events of a stream as they come on the
// returned channel, closed when the stream ends.
func statusEvents(t *testing.T, resp *http.Response) <-chan struct{} {
	c := make(chan struct{}, 1024)
	go func() {
		defer close(c)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if sc.Text() == "event: status" {
				c <- struct{}{}
			}
		}
	}()
	t.Cleanup(func() { _ = resp.Body.Close() })
	return c
}

// events waits for n events on c, failing the test if the stream ends or
// within passes first.
func events(t *testing.T, c <-chan struct{}, n int, within time.Duration) {
	t.Helper()
	timeout := time.After(within)
	for range n {
		select {
		case _, ok := <-c:
			require.True(t, ok, "the stream ended")
		case <-timeout:
			require.FailNow(t, "too few events")
		}
	}
}

// A client that does not read its stream is dropped once an event is not
// taken within the write timeout, while another stream goes on; when the
// server starts shutting down, every stream ends at once. A shopper who
// has not joined is refused as a look is.
func TestRoomStreamsDropSlowReadersAndEndAtShutdown(t *testing.T) {
	rs := &stubStreams{ended: map[string]chan struct{}{}}
	closing, shutdown := context.WithCancel(context.Background())
	defer shutdown()
	srv := httptest.NewServer(rawAPI(t, func(d *Deps) {
		d.Rooms = &stubDraw{}
		d.RoomStreams = rs
		d.Closing = closing
		d.HTTP.WriteTimeout = 200 * time.Millisecond
	}))
	defer srv.Close()
	open := func(user string) *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/api/v1/skus/1/queue/events", nil)
		require.NoError(t, err)
		req.Header.Set("X-User-ID", user)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp
	}

	nobody := open("nobody")
	assert.Equal(t, http.StatusNotFound, nobody.StatusCode)
	_ = nobody.Body.Close()

	calm := open("calm")
	defer calm.Body.Close()
	require.Equal(t, http.StatusOK, calm.StatusCode)
	calmEvents := statusEvents(t, calm)
	events(t, calmEvents, 3, 10*time.Second)

	// A client that sends its request and reads nothing.
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	_, err = fmt.Fprintf(conn, "GET /api/v1/skus/1/queue/events HTTP/1.1\r\nHost: seckill.test\r\nX-User-ID: flood\r\n\r\n")
	require.NoError(t, err)
	var flood chan struct{}
	require.Eventually(t, func() bool { flood = rs.endedOf("flood"); return flood != nil }, 10*time.Second, 10*time.Millisecond)
	select {
	case <-flood:
	case <-time.After(30 * time.Second):
		require.FailNow(t, "the client that does not read was not dropped")
	}
	events(t, calmEvents, 10, 10*time.Second)

	shutdown()
	select {
	case <-rs.endedOf("calm"):
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the stream did not end with the shutdown")
	}
	for range calmEvents { // the stream's end reaches the client
	}
}
