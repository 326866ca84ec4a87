package faulttest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/apitest"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/testutil"
)

// TestSlowReadersOfALargeDraw asks a running `seckill serve` for the
// published draw of a room of 500,000 tickets (15 MB of JSON) from 50
// connections at once that read its first bytes and then stop, as slow
// clients do. The process builds the draw once and sends every reader the
// same bytes, and writes it to a bounded number of readers at a time (the
// others are answered 503 busy): its memory grows by less than 64 MiB. A
// reader that stops holds its place until the server's write timeout, then
// the place serves another.
func TestSlowReadersOfALargeDraw(t *testing.T) {
	testutil.SkipShort(t, "starts a seckill process")
	const (
		tickets  = 500_000
		readers  = 50
		rssLimit = 64 << 10 // KiB
		// A process past this is stopped at once: the test has failed,
		// and the machine is shared.
		rssStop = 2 << 20 // KiB
	)
	d := sharedDeployment(t, map[string]string{"SECKILL_ROOM_PASS_KEYS": roomPassKey, "SECKILL_HTTP_WRITE_TIMEOUT": "10s"})
	p := d.serve("draw", "serve")

	// An ended sale whose room's pre-queue holds the tickets, written
	// straight to Redis as the joins would have (the room's keys, as
	// lua/room.lua names them).
	now := time.Now().UTC()
	a := d.admin("POST", "/admin/skus", map[string]any{"name": "Sneaker", "price_cents": 12000, "stock": 10,
		"per_user_limit": 1, "starts_at": now.Add(time.Hour), "ends_at": now.Add(2 * time.Hour),
		"waiting_room": map[string]any{"opens_at": now.Add(-time.Second)}}, http.StatusCreated)
	sku := uint64(a.Num("id"))
	room := stock.RoomPrefix(d.prefix, sku)
	for start := 0; start < tickets; start += 10_000 {
		zs := make([]redis.Z, 0, 10_000)
		for i := start; i < start+10_000; i++ {
			zs = append(zs, redis.Z{Score: float64(i + 1), Member: drawTicket(i)})
		}
		require.NoError(t, d.rdb.ZAdd(t.Context(), room+"pre", zs...).Err())
	}
	require.NoError(t, d.rdb.HSet(t.Context(), room+"meta", "epoch", drawTicket(0), "seq", tickets, "joined", tickets).Err())
	d.admin("POST", fmt.Sprintf("/admin/skus/%d/end", sku), nil, http.StatusOK)
	path := fmt.Sprintf("/api/v1/skus/%d/draw", sku)

	rss0 := p.RSSKiB()
	require.NotZero(t, rss0, "VmRSS of the server")
	var peak atomic.Int64
	peak.Store(rss0)
	sampled := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			rss := p.RSSKiB()
			peak.Store(max(peak.Load(), rss))
			if rss-rss0 > rssStop && p.Kill() {
				t.Errorf("stopped the server at %d KiB of RSS", rss)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	slow := make([]*slowReader, readers)
	var wg sync.WaitGroup
	for i := range slow {
		wg.Go(func() { slow[i] = startSlowReader(t, p.URL(), path) })
	}
	wg.Wait()
	close(stop)
	<-sampled
	defer func() {
		for _, r := range slow {
			r.Close()
		}
	}()
	counts := map[string]int{}
	for _, r := range slow {
		counts[r.answer]++
	}
	t.Logf("FAULT scenario=draw-readers tickets=%d readers=%d answers=%v rss_kib_before=%d rss_kib_peak=%d",
		tickets, readers, counts, rss0, peak.Load())
	assert.Less(t, peak.Load()-rss0, int64(rssLimit), "growth of the server's RSS in KiB")
	assert.Positive(t, counts["200"], "readers served")
	assert.Positive(t, counts["503 busy"], "readers told to come back")
	assert.Equal(t, readers, counts["200"]+counts["503 busy"], "no other answer: %v", counts)

	// The readers that stopped hold their places until the write timeout;
	// then another reader gets the whole draw. Not through the
	// deployment's client: checking 500,000 tickets against
	// api/openapi.yaml takes a minute (the answer of a small draw is
	// checked in internal/app).
	client := &http.Client{Timeout: time.Minute}
	var doc struct {
		PreQueue []string `json:"pre_queue"`
		Later    []string `json:"later"`
	}
	var last string
	served := assert.Eventually(t, func() bool {
		resp, err := client.Get(p.URL() + path)
		if err != nil {
			last = err.Error()
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			last = fmt.Sprintf("%d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
			return false
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
			last = err.Error()
			return false
		}
		return true
	}, 40*time.Second, 200*time.Millisecond)
	require.True(t, served, "the last answer: %s", last)
	require.Len(t, doc.PreQueue, tickets)
	assert.Equal(t, drawTicket(tickets-1), doc.PreQueue[tickets-1])
	assert.Empty(t, doc.Later)
}

// drawTicket is the ticket i of the test's room: "t" and 26 characters
// of base32, as a room's tickets are.
func drawTicket(i int) string {
	return "t" + strings.Map(func(r rune) rune { return 'a' + r - '0' }, fmt.Sprintf("%026d", i))
}

// slowReader is a connection that sent a request, read the status line
// and the headers of the answer, and reads nothing more until closed.
type slowReader struct {
	conn net.Conn
	body io.Closer
	// answer is "200", the status and error code of another answer, or
	// "no answer: " and why.
	answer string
}

// startSlowReader sends a GET of path to base and reads the answer's head,
// and the whole of an answer other than 200, which it checks against
// api/openapi.yaml.
func startSlowReader(t *testing.T, base, path string) *slowReader {
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		return &slowReader{answer: "no answer: " + err.Error()}
	}
	r := &slowReader{conn: conn}
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: seckill\r\n\r\n", path); err != nil {
		r.answer = "no answer: " + err.Error()
		return r
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 4<<10), nil) //nolint:bodyclose // closed by Close, after the connection
	if err != nil {
		r.answer = "no answer: " + err.Error()
		return r
	}
	r.body = resp.Body
	r.answer = fmt.Sprint(resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			r.answer += " cut short: " + err.Error()
			return r
		}
		req, _ := http.NewRequest("GET", base+path, nil)
		assert.NoError(t, apitest.Check(req, nil, resp.StatusCode, resp.Header, body))
		var e struct{ Error string }
		_ = json.Unmarshal(body, &e)
		r.answer += " " + e.Error
	}
	return r
}

// Close closes the connection, and then the answer's body.
func (r *slowReader) Close() {
	if r.conn != nil {
		_ = r.conn.Close()
	}
	if r.body != nil {
		_ = r.body.Close()
	}
}
