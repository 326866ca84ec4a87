package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/console"
	"github.com/seckill/seckill/internal/sale"
)

// countedSales counts the console's reads of the real service.
type countedSales struct {
	*sale.Service
	lists, queues atomic.Int64
}

func (c *countedSales) AdminSKUs(ctx context.Context, after uint64, limit int) ([]sale.AdminSKUView, uint64, error) {
	c.lists.Add(1)
	return c.Service.AdminSKUs(ctx, after, limit)
}

func (c *countedSales) Queue(ctx context.Context, sku uint64, n int) (*sale.QueueReport, error) {
	c.queues.Add(1)
	return c.Service.Queue(ctx, sku, n)
}

// stream is one console's live feed, read as its frames come.
type stream struct {
	frames chan [2]string // event, data
	ended  chan struct{}
}

func openStream(t *testing.T, c *http.Client, url string) *stream {
	t.Helper()
	resp, err := c.Get(url) //nolint:bodyclose // closed by the reader below
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	s := &stream{frames: make(chan [2]string, 1024), ended: make(chan struct{})}
	go func() {
		defer close(s.ended)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var event string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				select {
				case s.frames <- [2]string{event, strings.TrimPrefix(line, "data: ")}:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return s
}

// next returns the next frame of the event, skipping others.
func (s *stream) next(t *testing.T, event string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case f := <-s.frames:
			if f[0] == event {
				return f[1]
			}
		case <-s.ended:
			t.Fatalf("the stream ended while waiting for %q", event)
		case <-deadline:
			t.Fatalf("no %q frame", event)
		}
	}
}

// consoleServer serves a console on sales, sampling every interval and
// auditing every audit, with the read and write timeouts of the server
// (0: none), and returns it with a client logged in to it.
func consoleServer(t *testing.T, sales console.Sales, interval, audit, timeouts time.Duration) (*console.Console, *httptest.Server, *http.Client) {
	t.Helper()
	con, err := console.New(sales, console.Options{Token: adminToken, Interval: interval, AuditEvery: audit,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	gin.SetMode(gin.TestMode)
	r := gin.New()
	con.Routes(r.Group("/console"), func(*gin.RouterGroup) {})
	srv := httptest.NewUnstartedServer(r)
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = timeouts, timeouts
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(con.Close)

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := &http.Client{Jar: jar, Timeout: time.Minute}
	resp, err := client.PostForm(srv.URL+"/console/login", url.Values{"token": {adminToken}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "logged in and sent on to the sales page")
	return con, srv, client
}

// Many consoles and many buys cost the stores one read per sample: every
// console gets the same frame, and a buy costs the feed nothing. The feed's
// streams end when the console closes, as a server's shutdown does.
func TestConsoleFeedReadsOnceForEveryConsole(t *testing.T) {
	s := startSale(t, saleOpts{})
	sku := s.seed(100, 1)
	sales := &countedSales{Service: s.apps[0].Sales}
	con, srv, client := consoleServer(t, sales, 200*time.Millisecond, time.Hour, 0)

	var streams []*stream
	for i := range 12 {
		path := fmt.Sprintf("/console/events?sku=%d", sku)
		if i%3 == 0 {
			path = "/console/events"
		}
		streams = append(streams, openStream(t, client, srv.URL+path))
	}
	// The sampler runs: the counts start here.
	streams[0].next(t, "sales")
	streams[1].next(t, "sale")
	lists, queues := sales.lists.Load(), sales.queues.Load()

	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() { s.order(0, sku, fmt.Sprintf("crowd-%d", i)) })
	}
	wg.Wait()
	// Every console watching the sale sees the buys, in frames of the same
	// samples.
	var frames int64
	for i, st := range streams {
		if i%3 == 0 {
			continue
		}
		for n := int64(1); ; n++ {
			var f struct {
				SKU struct {
					RedisLeft *int64 `json:"redis_left"`
				} `json:"sku"`
			}
			require.NoError(t, json.Unmarshal([]byte(st.next(t, "sale")), &f))
			if f.SKU.RedisLeft != nil && *f.SKU.RedisLeft == 70 {
				frames = max(frames, n)
				break
			}
		}
	}
	samples := max(sales.lists.Load()-lists, sales.queues.Load()-queues)
	t.Logf("%d samples read for 12 consoles; %d frames until the buys showed", samples, frames)
	assert.LessOrEqual(t, sales.queues.Load()-queues, samples, "one queue read per sample")
	assert.LessOrEqual(t, samples, 2*frames+4,
		"reads follow the samples (%d frames to see the buys), not the 12 consoles or the 30 buys", frames)

	done := make(chan struct{})
	go func() {
		con.Close()
		close(done)
	}()
	for _, st := range streams {
		select {
		case <-st.ended:
		case <-time.After(30 * time.Second):
			t.Fatal("a live feed outlived the console's close")
		}
	}
	<-done
	after := sales.lists.Load() + sales.queues.Load()
	time.Sleep(600 * time.Millisecond)
	assert.Equal(t, after, sales.lists.Load()+sales.queues.Load(), "the sampler stopped with the console")
}

// A sale with a waiting room shows the room's settings, and its counters
// from the audit.
func TestConsoleShowsAWaitingRoom(t *testing.T) {
	s := startSale(t, saleOpts{env: map[string]string{"SECKILL_ROOM_PASS_KEYS": roomKey}})
	sku := s.seedRoom(10, time.Minute, map[string]any{"mode": "fifo", "admit_per_second": 5, "pass_ttl": "30s", "overbook": 1})
	for _, user := range []string{"ann", "bob", "cid"} {
		r := s.do(0, "POST", fmt.Sprintf("/api/v1/skus/%d/queue", sku), user, nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
	}
	_, srv, client := consoleServer(t, s.apps[0].Sales, 200*time.Millisecond, 200*time.Millisecond, 0)
	resp, err := client.Get(fmt.Sprintf("%s/console/skus/%d", srv.URL, sku))
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, want := range []string{"Waiting room", "<dd>fifo</dd>", "<dd>30s</dd>", `id="room-joined"`} {
		assert.Contains(t, string(page), want)
	}
	st := openStream(t, client, fmt.Sprintf("%s/console/events?sku=%d", srv.URL, sku))
	var audit sale.Report
	require.NoError(t, json.Unmarshal([]byte(st.next(t, "audit")), &audit))
	require.NotNil(t, audit.WaitingRoom)
	assert.EqualValues(t, 3, audit.WaitingRoom.Joined)

	resp, err = client.Get(srv.URL + "/console/skus/999999999")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "no such sale")
}

// A live feed outlives the server's read and write timeouts, which are for
// requests and answers.
func TestConsoleFeedOutlivesTheServersTimeouts(t *testing.T) {
	s := startSale(t, saleOpts{})
	s.seed(5, 1)
	_, srv, client := consoleServer(t, s.apps[0].Sales, 100*time.Millisecond, time.Hour, 300*time.Millisecond)
	st := openStream(t, client, srv.URL+"/console/events")
	deadline := time.Now().Add(time.Second) // three timeouts
	for n := 0; time.Now().Before(deadline); n++ {
		st.next(t, "sales")
	}
}

// The console's events page shows the receivers of a server whose events
// are on, and says events are off on one without a receiver: the server
// gives the console the outbox only when events are on.
func TestConsoleEventsPageFollowsTheEventsSetting(t *testing.T) {
	t.Parallel()
	for name, env := range map[string]map[string]string{
		"off": nil,
		"on":  {"SECKILL_EVENTS_WEBHOOK_URL": "http://127.0.0.1:9/hooks", "SECKILL_EVENTS_WEBHOOK_SECRET": eventSecret},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := startSale(t, saleOpts{env: env, noWorkers: true})
			jar, err := cookiejar.New(nil)
			require.NoError(t, err)
			client := &http.Client{Jar: jar, Timeout: time.Minute}
			resp, err := client.PostForm(s.urls[0]+"/console/login", url.Values{"token": {adminToken}})
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			resp, err = client.Get(s.urls[0] + "/console/receivers")
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
			if env == nil {
				assert.Contains(t, string(body), `id="events-off"`)
			} else {
				assert.NotContains(t, string(body), `id="events-off"`)
			}
		})
	}
}
