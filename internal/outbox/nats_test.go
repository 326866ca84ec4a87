package outbox

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// newNATS returns the sink of prefix on the server at url, closed at the
// end of the test.
func newNATS(t testing.TB, url, prefix string) *NATS {
	t.Helper()
	n, err := NewNATS(url, prefix, 0, Format{}, quiet)
	require.NoError(t, err)
	t.Cleanup(n.Close)
	return n
}

// jetStream returns a JetStream client of the server at url.
func jetStream(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}

// streamed returns, from stream, the message id of every message it holds,
// by subject, in order.
func streamed(t *testing.T, js jetstream.JetStream, stream string) map[string][]string {
	t.Helper()
	ctx := t.Context()
	s, err := js.Stream(ctx, stream)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	out := map[string][]string{}
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		require.NoError(t, err)
		out[m.Subject] = append(out[m.Subject], m.Header.Get(jetstream.MsgIDHeader))
	}
	return out
}

// With no stream on its subjects the sink makes one (<prefix>.>, file
// storage, the duplicate window), and publishes each event on
// <prefix>.<type> with the event id as message id: the same event
// published twice is stored once.
func TestNATSMakesStreamAndStoresEachEventOnce(t *testing.T) {
	t.Parallel()
	srv := testsvc.StartNATS(t)
	n := newNATS(t, srv.URL(), "seckill")
	created, paid := event(t, OrderCreated, "A", t0), event(t, OrderPaid, "A", t0)

	require.NoError(t, n.Send(t.Context(), &created))
	require.NoError(t, n.Send(t.Context(), &created), "again, as a retry")
	require.NoError(t, n.Send(t.Context(), &paid))

	js := jetStream(t, srv.URL())
	s, err := js.Stream(t.Context(), "SECKILL_EVENTS")
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	assert.Equal(t, []string{"seckill.>"}, cfg.Subjects)
	assert.Equal(t, jetstream.FileStorage, cfg.Storage)
	assert.Equal(t, DuplicateWindow, cfg.Duplicates)
	assert.Equal(t, map[string][]string{
		"seckill.order.created": {created.EventID},
		"seckill.order.paid":    {paid.EventID},
	}, streamed(t, js, "SECKILL_EVENTS"))

	m, err := s.GetMsg(t.Context(), 1)
	require.NoError(t, err)
	assert.Equal(t, created.Payload, string(m.Data), "the event as stored")
	assert.Equal(t, "application/json", m.Header.Get("Content-Type"))
}

// A stream that already takes the subjects is used as it is.
func TestNATSUsesExistingStream(t *testing.T) {
	t.Parallel()
	srv := testsvc.StartNATS(t)
	js := jetStream(t, srv.URL())
	_, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "ALL", Subjects: []string{"shop.>"}, Duplicates: time.Minute})
	require.NoError(t, err)

	n := newNATS(t, srv.URL(), "shop")
	e := event(t, OrderCreated, "A", t0)
	require.NoError(t, n.Send(t.Context(), &e))
	require.NoError(t, n.Send(t.Context(), &e))

	var names []string
	for name := range js.StreamNames(t.Context()).Name() {
		names = append(names, name)
	}
	assert.Equal(t, []string{"ALL"}, names, "no stream made")
	assert.Equal(t, map[string][]string{"shop.order.created": {e.EventID}}, streamed(t, js, "ALL"))
}

// While the server is down a send fails; once it is back the sink
// reconnects by itself and the send succeeds, the event stored once
// although the failed attempt may have reached the server too.
func TestNATSSurvivesServerRestart(t *testing.T) {
	t.Parallel()
	srv := testsvc.StartNATS(t)
	n := newNATS(t, srv.URL(), "seckill")
	before, during := event(t, OrderCreated, "A", t0), event(t, OrderPaid, "A", t0)
	require.NoError(t, n.Send(t.Context(), &before))

	srv.Kill()
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	err := n.Send(ctx, &during)
	cancel()
	require.Error(t, err, "the server is down")

	srv.Start()
	testutil.Eventually(t, 30*time.Second, "a send after the restart", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		return n.Send(ctx, &during) == nil
	})

	got := streamed(t, jetStream(t, srv.URL()), n.Stream())
	assert.Equal(t, []string{during.EventID}, got["seckill.order.paid"])
	assert.LessOrEqual(t, len(got["seckill.order.created"]), 1)
}

// A dispatcher with both sinks gets every event to both: when the webhook
// refuses, the event is sent again to the webhook, with the same id, and
// JetStream stores it once.
func TestDispatcherToNATSAndWebhook(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	srv := testsvc.StartNATS(t)
	n := newNATS(t, srv.URL(), "seckill")

	var mu sync.Mutex
	seen := map[string]int{} // webhook deliveries by event id
	hookSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		defer mu.Unlock()
		id := r.Header.Get("webhook-id")
		seen[id]++
		if seen[id] == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(hookSrv.Close)
	hook, err := NewWebhook("shop", hookSrv.URL, []string{secret()}, Format{}, nil)
	require.NoError(t, err)

	now := time.Now()
	registered(t, db, n.Name(), hook.Name())
	events := store(t, db, event(t, OrderCreated, "A", now), event(t, OrderPaid, "A", now),
		event(t, OrderCreated, "B", now), event(t, OrderFailed, "C", now))
	run(t, NewDispatcher(db, Options{Sinks: []Sink{n, hook}, Poll: 2 * time.Millisecond, Backoff: fast, Log: quiet}))
	testutil.Eventually(t, 30*time.Second, "every event delivered", func() bool {
		c, err := Count(t.Context(), db, time.Now())
		return err == nil && len(c) == 2 && c[0].Delivered == int64(len(events)) && c[1].Delivered == int64(len(events))
	})

	got := streamed(t, jetStream(t, srv.URL()), n.Stream())
	var ids []string
	for _, subjectIDs := range got {
		ids = append(ids, subjectIDs...)
	}
	assert.ElementsMatch(t, []string{events[0].EventID, events[1].EventID, events[2].EventID, events[3].EventID}, ids,
		"each event once in the stream")
	mu.Lock()
	defer mu.Unlock()
	for _, e := range events {
		assert.Equal(t, 2, seen[e.EventID], "%s: refused once, then accepted", e.EventID)
	}
}
