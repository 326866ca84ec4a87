package console

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/sale"
	"github.com/seckill/seckill/internal/testutil"
)

// bigSales answers as many SKUs as asked for, each with a 2 KB name: the
// sales page's frame is about a megabyte, far more than the sockets of a
// console that stopped reading hold.
type bigSales struct{ fakeSales }

func (bigSales) AdminSKUs(_ context.Context, after uint64, limit int) ([]sale.AdminSKUView, uint64, error) {
	views := make([]sale.AdminSKUView, limit)
	for i := range views {
		views[i].ID, views[i].Name = after+uint64(i)+1, strings.Repeat("n", 2048)
	}
	return views, after + uint64(limit), nil
}

// stuckAfter is how much a connection is handed before a console that reads
// nothing cannot take more: with both sockets' buffers at 4 KB, far less.
const stuckAfter = 512 << 10

// signs are what the server's side of one connection shows: pastBuffers is
// closed once it has been handed more than stuckAfter bytes (from then on a
// write waits for a reader), closed once the server has closed it.
type signs struct {
	pastBuffers, closed chan struct{}
}

// watchedConn is the server's side of a connection, giving its signs.
type watchedConn struct {
	net.Conn
	signs *signs
	mu    sync.Mutex
	n     int
	once  [2]sync.Once
}

func (c *watchedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.n += len(p)
	if c.n > stuckAfter {
		c.once[0].Do(func() { close(c.signs.pastBuffers) })
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *watchedConn) Close() error {
	err := c.Conn.Close()
	c.once[1].Do(func() { close(c.signs.closed) })
	return err
}

// watchingListener gives each connection it accepts a 4 KB send buffer and
// watches it, by the client's address.
type watchingListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[string]*signs
}

func (l *watchingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	_ = c.(*net.TCPConn).SetWriteBuffer(4096)
	return &watchedConn{Conn: c, signs: l.signsOf(c.RemoteAddr().String())}, nil
}

// signsOf are the signs of the connection from the client at addr.
func (l *watchingListener) signsOf(addr string) *signs {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[addr] == nil {
		l.conns[addr] = &signs{pastBuffers: make(chan struct{}), closed: make(chan struct{})}
	}
	return l.conns[addr]
}

// feedServer serves a console over bigSales the way the server does, its
// Close registered to run when a shutdown starts, and returns the server,
// its listener and a session cookie.
func feedServer(t *testing.T, o Options) (*http.Server, *watchingListener, *http.Cookie) {
	t.Helper()
	o.Token, o.Interval, o.AuditEvery = token, 100*time.Millisecond, time.Hour
	o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := New(bigSales{}, o)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	_, h := newTest(t, token, testutil.NewClock(time.Now()))
	cookie, _ := sessionOf(t, h) // a session of the token, good on every console
	r := gin.New()
	c.Routes(r.Group("/console"), func(*gin.RouterGroup) {})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	wl := &watchingListener{Listener: ln, conns: map[string]*signs{}}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	srv.RegisterOnShutdown(c.Close)
	go func() { _ = srv.Serve(wl) }()
	t.Cleanup(func() { _ = srv.Close() })
	return srv, wl, cookie
}

// openFeed asks for the sales page's feed with a 4 KB receive buffer and
// returns the connection, unread, and the signs of its server side.
func openFeed(t *testing.T, wl *watchingListener, cookie *http.Cookie) (net.Conn, *signs) {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	conn, err := d.Dial("tcp", wl.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "GET /console/events HTTP/1.1\r\nHost: console.test\r\nCookie: %s=%s\r\n\r\n", cookie.Name, cookie.Value)
	require.NoError(t, err)
	return conn, wl.signsOf(conn.LocalAddr().String())
}

// readFeed reads conn until it ends, as a console that keeps up does.
func readFeed(conn net.Conn) (ended <-chan struct{}) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(io.Discard, conn)
	}()
	return done
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("no sign that %s", what)
	}
}

// shutdown shuts srv down as the server does, giving it a minute, and
// returns what Shutdown returned and how long it took.
func shutdown(srv *http.Server) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	err := srv.Shutdown(ctx)
	return time.Since(start), err
}

// A graceful shutdown ends the live feeds at once: those of consoles that
// stopped reading, stuck in the write of a frame they do not take, as the
// others. It waits neither for the frame's deadline nor until its own
// (a minute here, which it used to reach with any stuck feed).
func TestShutdownDoesNotWaitForConsolesThatStoppedReading(t *testing.T) {
	// A frame's deadline past the shutdown's: only ending the feeds at
	// once lets the shutdown finish.
	o := Options{WriteTimeout: time.Hour}
	measure := func(stuck, healthy int) time.Duration {
		srv, wl, cookie := feedServer(t, o)
		var ended []<-chan struct{}
		for range healthy {
			conn, s := openFeed(t, wl, cookie)
			ended = append(ended, readFeed(conn))
			waitFor(t, s.pastBuffers, "a console that reads took its frames") // more than a stuck one can
		}
		for range stuck {
			_, s := openFeed(t, wl, cookie)
			waitFor(t, s.pastBuffers, "a console that reads nothing is stuck in a write")
		}
		took, err := shutdown(srv)
		require.NoError(t, err, "the shutdown finished before its deadline, with %d stuck feeds", stuck)
		for _, e := range ended {
			waitFor(t, e, "a console that reads saw its feed end")
		}
		return took
	}
	healthy := measure(0, 3)
	stuck := measure(3, 1)
	t.Logf("shutdown with 3 feeds read: %s; with 3 stuck feeds and one read: %s", healthy, stuck)
}

// A console that does not take a frame within WriteTimeout is closed and
// frees its place for another.
func TestAFeedThatCannotTakeAFrameIsClosed(t *testing.T) {
	_, wl, cookie := feedServer(t, Options{WriteTimeout: 200 * time.Millisecond, MaxConsoles: 1})
	_, s := openFeed(t, wl, cookie)
	waitFor(t, s.pastBuffers, "the console that reads nothing is stuck in a write")
	waitFor(t, s.closed, "the server closed the stuck console's connection")

	// The place is given back when the stuck console's handler returns,
	// which may be a moment after its connection was closed.
	testutil.Eventually(t, 30*time.Second, "the stuck console's place free for another", func() bool {
		req, err := http.NewRequest(http.MethodGet, "http://"+wl.Addr().String()+"/console/events", nil)
		require.NoError(t, err)
		req.AddCookie(cookie)
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, resp.StatusCode)
		return resp.StatusCode == http.StatusOK
	})
}
