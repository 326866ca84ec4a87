package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/room"
)

// sse is one shopper's open room stream, its events read as they come.
type sse struct {
	t      *testing.T
	resp   *http.Response
	events chan sseEvent
	cancel context.CancelFunc
}

type sseEvent struct {
	st room.Status
	at time.Time
}

// refusal is a stream's answer other than 200, read whole.
type refusal struct {
	status int
	header http.Header
	code   string // the error code of its body
}

// openStream opens user's stream of sku on instance i; an answer other
// than 200 is its refusal.
func (s *deployment) openStream(i int, sku uint64, user string) (*sse, refusal) {
	s.t.Helper()
	ctx, cancel := context.WithCancel(s.t.Context())
	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/api/v1/skus/%d/queue/events", s.urls[i%len(s.urls)], sku), nil)
	require.NoError(s.t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-User-ID", user)
	// Not through s.client: its transport reads every answer whole.
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	if resp.StatusCode != http.StatusOK {
		defer cancel()
		return nil, refusal{status: resp.StatusCode, header: resp.Header, code: errorOf(s.t, resp)}
	}
	assert.Equal(s.t, "text/event-stream", resp.Header.Get("Content-Type"))
	st := &sse{t: s.t, resp: resp, events: make(chan sseEvent, 64), cancel: cancel}
	go st.read()
	s.t.Cleanup(st.close)
	return st, refusal{status: http.StatusOK}
}

// read parses the stream's events until it ends, then closes events.
func (e *sse) read() {
	defer close(e.events)
	sc := bufio.NewScanner(e.resp.Body)
	var event, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if event != "" || data != "" {
				assert.Equal(e.t, "status", event, "the only event type")
				var st room.Status
				if assert.NoError(e.t, json.Unmarshal([]byte(data), &st), data) {
					e.events <- sseEvent{st: st, at: time.Now()}
				}
			}
			event, data = "", ""
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
}

func (e *sse) close() {
	e.cancel()
	_ = e.resp.Body.Close()
}

// until reads events until one for which ok is true, and returns it with
// those before; it fails the test if the stream ends or within does first.
func (e *sse) until(within time.Duration, ok func(room.Status) bool) (sseEvent, []room.Status) {
	e.t.Helper()
	timeout := time.After(within)
	var seen []room.Status
	for {
		select {
		case ev, open := <-e.events:
			require.True(e.t, open, "the stream ended; seen %+v", seen)
			if ok(ev.st) {
				return ev, seen
			}
			seen = append(seen, ev.st)
		case <-timeout:
			require.FailNow(e.t, "no such event", "seen %+v", seen)
		}
	}
}

// ended waits for the stream to end, failing at an event.
func (e *sse) ended(within time.Duration) {
	e.t.Helper()
	select {
	case ev, open := <-e.events:
		require.False(e.t, open, "an event after the end: %+v", ev.st)
	case <-time.After(within):
		require.FailNow(e.t, "the stream did not end")
	}
}

func statusIs(want string) func(room.Status) bool {
	return func(st room.Status) bool { return st.Status == want }
}

// Shoppers waiting on streams are told their place as the line moves, the
// first is admitted with a pass, and once the last unit sells every one
// still waiting is told sold_out, without polling; the one who bought is
// told their ticket is closed, and their stream ends.
func TestRoomStreamsTellPlacesAdmissionAndSoldOut(t *testing.T) {
	s := startSale(t, saleOpts{instances: 2, env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	// One unit, one pass at a time: the first shopper is admitted, the
	// others wait behind them until it sells.
	sku := s.seedRoom(1, 3*time.Second, map[string]any{"mode": "fifo", "admit_per_second": 1, "pass_ttl": "1m", "overbook": 1})
	queue := fmt.Sprintf("/api/v1/skus/%d/queue", sku)
	const shoppers = 6
	streams := make([]*sse, shoppers)
	for i := range shoppers {
		r := s.do(i, "POST", queue, fmt.Sprintf("w%d", i), nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		require.EqualValues(t, i+1, r.Num("position"), r.Raw)
	}
	for i := range shoppers {
		st, refused := s.openStream(i, sku, fmt.Sprintf("w%d", i))
		require.NotNil(t, st, "%+v", refused)
		streams[i] = st
	}
	for i, st := range streams {
		first, _ := st.until(10*time.Second, func(room.Status) bool { return true })
		assert.EqualValues(t, i+1, first.st.Position, "%+v", first.st)
		assert.NotEmpty(t, first.st.Ticket)
	}

	admitted, _ := streams[0].until(20*time.Second, statusIs(room.Admitted))
	require.NotEmpty(t, admitted.st.Pass, "the pass comes with the admission")
	require.NotNil(t, admitted.st.PassExpiresAt)
	// The line moved by one: the second shopper is next.
	next, _ := streams[1].until(10*time.Second, func(st room.Status) bool { return st.Ahead == 0 })
	assert.Equal(t, room.Waiting, next.st.Status)
	assert.EqualValues(t, 2, next.st.Position)

	b := s.do(0, "POST", "/api/v1/orders", "w0", map[string]any{"sku_id": sku, "qty": 1, "pass": admitted.st.Pass})
	require.Equal(t, http.StatusAccepted, b.Status, b.Raw)
	sold := time.Now()
	// Read one stream after the other: each event was timed as it came.
	var slowest time.Duration
	for i := 1; i < shoppers; i++ {
		ev, _ := streams[i].until(10*time.Second, statusIs(room.SoldOut))
		assert.EqualValues(t, i+1, ev.st.Position)
		slowest = max(slowest, ev.at.Sub(sold))
	}
	t.Logf("every waiting shopper was told sold_out within %v of the buy's answer", slowest)

	closed, _ := streams[0].until(10*time.Second, statusIs(room.Closed))
	assert.Equal(t, "pass_used", closed.st.Reason)
	streams[0].ended(10 * time.Second)
}

// A room stream is refused to a shopper who has not joined and for a SKU
// without a room, as a look is; past room.streams an instance refuses
// more (429, Retry-After), a shopper's new stream replacing their old one;
// and when the sale ends every stream is told its ticket is closed.
func TestRoomStreamsAreBoundedAndToldTheEnd(t *testing.T) {
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey, "SECKILL_ROOM_STREAMS": "2"}})
	sku := s.seedRoom(5, time.Hour-time.Minute, map[string]any{"mode": "random"})
	plain := s.seed(5, 1)

	_, refused := s.openStream(0, sku, "nobody")
	require.Equal(t, http.StatusNotFound, refused.status)
	assert.Equal(t, "no_ticket", refused.code)
	_, refused = s.openStream(0, plain, "nobody")
	require.Equal(t, http.StatusNotFound, refused.status)
	assert.Equal(t, "no_waiting_room", refused.code)

	for _, u := range []string{"a", "b", "c"} {
		r := s.do(0, "POST", fmt.Sprintf("/api/v1/skus/%d/queue", sku), u, nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
	}
	a, _ := s.openStream(0, sku, "a")
	require.NotNil(t, a)
	first, _ := a.until(10*time.Second, statusIs(room.Waiting))
	assert.EqualValues(t, 0, first.st.Position, "in the pre-queue")
	bs, _ := s.openStream(0, sku, "b")
	require.NotNil(t, bs)
	_, refused = s.openStream(0, sku, "c")
	require.Equal(t, http.StatusTooManyRequests, refused.status)
	assert.Equal(t, "too_many_streams", refused.code)
	assert.NotEmpty(t, refused.header.Get("Retry-After"))

	again, _ := s.openStream(0, sku, "a")
	require.NotNil(t, again, "a shopper's new stream replaces their old one")
	a.ended(10 * time.Second)
	again.until(10*time.Second, statusIs(room.Waiting))

	require.Equal(t, http.StatusOK, s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/end", sku), "", nil).Status)
	for _, st := range []*sse{again, bs} {
		ev, _ := st.until(10*time.Second, statusIs(room.Closed))
		assert.Equal(t, "sale_ended", ev.st.Reason)
		st.ended(10 * time.Second)
	}
}

// errorOf reads the error code of an error answer.
func errorOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var e struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(b, &e), string(b))
	return e.Error
}
