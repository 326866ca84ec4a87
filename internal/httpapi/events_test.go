package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/outbox"
)

// stubEvents records what the event handlers ask for and knows one event.
type stubEvents struct {
	view     outbox.View
	calls    int
	status   string
	receiver string
	after    uint64
	limit    int
}

const stubEventID = "evt_created_42-01hxd7k2m3n4p5q6r7s8t9v0"

// stubEventView is the order.created event of an order, pending.
func stubEventView(t testing.TB) outbox.View {
	t.Helper()
	at := time.Date(2026, 11, 11, 0, 0, 1, 0, time.UTC)
	o := order.AdminView{View: order.View{OrderID: "42-01hxd7k2m3n4p5q6r7s8t9v0", SKU: 42, User: "alice", Qty: 1,
		PriceCents: 100, Status: order.StatusPendingPayment, CreatedAt: at, ExpiresAt: at.Add(15 * time.Minute),
		PaymentReference: stubReference("42-01hxd7k2m3n4p5q6r7s8t9v0")}, Refund: order.RefundNone}
	e, err := outbox.New(outbox.OrderCreated, o.OrderID, "", at, outbox.OrderData{Order: o})
	require.NoError(t, err)
	return outbox.View{EventID: e.EventID, Type: e.Type, OrderID: e.OrderID, Receiver: "shop", Status: outbox.StatusPending,
		CreatedAt: at, NextAt: &at, Event: json.RawMessage(e.Payload)}
}

func (s *stubEvents) List(_ context.Context, status, receiver string, after uint64, limit int) ([]outbox.View, uint64, error) {
	s.calls++
	s.status, s.receiver, s.after, s.limit = status, receiver, after, limit
	return nil, 17, nil
}

func (s *stubEvents) Receivers(context.Context) ([]outbox.Backlog, error) {
	s.calls++
	return []outbox.Backlog{{Receiver: "kafka", Pending: 12, Delivered: 3400, Dead: 1, OldestPendingSeconds: 2.5},
		{Receiver: "shop", Delivered: 3413}}, nil
}

// GET /admin/events/receivers answers every receiver's backlog.
func TestEventReceivers(t *testing.T) {
	ev := &stubEvents{view: stubEventView(t)}
	h := testAPI(t, func(d *Deps) { d.Events = ev })
	w := send(h, "GET", "/admin/events/receivers", nil, map[string]string{"Authorization": "Bearer " + testAdminToken})
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.JSONEq(t, `{"items":[
		{"receiver":"kafka","pending":12,"delivered":3400,"dead":1,"oldest_pending_seconds":2.5},
		{"receiver":"shop","pending":0,"delivered":3413,"dead":0,"oldest_pending_seconds":0}]}`, w.Body.String())
	w = send(h, "GET", "/admin/events/receivers", nil, nil)
	assert.Equal(t, http.StatusUnauthorized, w.Code)
}

func (s *stubEvents) Redeliver(_ context.Context, eventID, receiver string) ([]outbox.View, error) {
	s.calls++
	s.receiver = receiver
	if eventID != s.view.EventID || receiver != "" && receiver != s.view.Receiver {
		return nil, outbox.ErrNotFound
	}
	return []outbox.View{s.view}, nil
}

// The list's filters and page reach the outbox as given, a redelivery
// answers the deliveries it made pending, and every bad input is 400 before
// the outbox is asked.
func TestEventHandlers(t *testing.T) {
	ev := &stubEvents{view: stubEventView(t)}
	require.Equal(t, stubEventID, ev.view.EventID)
	h := testAPI(t, func(d *Deps) { d.Events = ev })
	admin := map[string]string{"Authorization": "Bearer " + testAdminToken}

	w := send(h, "GET", "/admin/events", nil, admin)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, outbox.StatusPending, ev.status)
	assert.Empty(t, ev.receiver, "every receiver's")
	assert.Equal(t, defaultLimit, ev.limit)
	assert.Zero(t, ev.after)
	next := encodeCursor(17)
	assert.JSONEq(t, `{"items":[],"next_cursor":"`+next+`"}`, w.Body.String())

	w = send(h, "GET", "/admin/events?status=dead&receiver=shop.example.com:8443/hooks%3Fx&limit=500&cursor="+next, nil, admin)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, outbox.StatusDead, ev.status)
	assert.Equal(t, "shop.example.com:8443/hooks?x", ev.receiver)
	assert.Equal(t, outbox.MaxPage, ev.limit)
	assert.Equal(t, uint64(17), ev.after)

	for _, q := range []string{"", "?receiver=shop"} {
		w = send(h, "POST", "/admin/events/"+stubEventID+"/redeliver"+q, nil, admin)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		var got struct{ Items []outbox.View }
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &got))
		require.Len(t, got.Items, 1, q)
		assert.Equal(t, stubEventID, got.Items[0].EventID)
		assert.Equal(t, "shop", got.Items[0].Receiver)
	}
	assert.Equal(t, "shop", ev.receiver)
	w = send(h, "POST", "/admin/events/"+stubEventID+"/redeliver?receiver=crm", nil, admin)
	assert.Equal(t, http.StatusNotFound, w.Code, w.Body.String())
	assert.Equal(t, "not_found", errorCode(t, w))

	w = send(h, "POST", "/admin/events/evt_created_1-unknown/redeliver", nil, admin)
	assert.Equal(t, http.StatusNotFound, w.Code, w.Body.String())
	assert.Equal(t, "not_found", errorCode(t, w))
	calls := ev.calls

	for _, path := range []string{
		"/admin/events?status=bogus",
		"/admin/events?status=",
		"/admin/events?limit=0",
		"/admin/events?limit=501",
		"/admin/events?limit=ten",
		"/admin/events?cursor=",
		"/admin/events?cursor=nope",
		"/admin/events?receiver=",
		"/admin/events?receiver=a%20b",
		"/admin/events?receiver=%C3%A9",
		"/admin/events?receiver=a%0Ab",
		"/admin/events?receiver=" + strings.Repeat("a", maxReceiverLen+1),
		"/admin/events?status=dead&receiver=",
	} {
		w := send(h, "GET", path, nil, admin)
		assert.Equal(t, http.StatusBadRequest, w.Code, "%s: %s", path, w.Body.String())
		assert.Equal(t, "invalid_request", errorCode(t, w), path)
	}
	for _, id := range []string{
		"created_1-x",
		"evt_",
		"EVT_created_1-x",
		"evt_a%20b",
		"evt_a%2Bb",
		"evt_%C3%A9",
		"evt_" + strings.Repeat("a", maxEventIDLen-len("evt_")+1),
	} {
		w := send(h, "POST", "/admin/events/"+id+"/redeliver", nil, admin)
		assert.Equal(t, http.StatusBadRequest, w.Code, "%s: %s", id, w.Body.String())
		assert.Equal(t, "invalid_request", errorCode(t, w), id)
	}
	for _, q := range []string{"receiver=", "receiver=a%20b", "receiver=" + strings.Repeat("a", maxReceiverLen+1)} {
		w := send(h, "POST", "/admin/events/"+stubEventID+"/redeliver?"+q, nil, admin)
		assert.Equal(t, http.StatusBadRequest, w.Code, "%s: %s", q, w.Body.String())
		assert.Equal(t, "invalid_request", errorCode(t, w), q)
	}
	assert.Equal(t, calls, ev.calls, "nothing bad reaches the outbox")
	longest := "evt_" + strings.Repeat("a", maxEventIDLen-len("evt_"))
	assert.Equal(t, http.StatusNotFound, send(h, "POST", "/admin/events/"+longest+"/redeliver", nil, admin).Code)

	assert.Equal(t, http.StatusUnauthorized, send(h, "GET", "/admin/events", nil, nil).Code)
	assert.Equal(t, http.StatusUnauthorized, send(h, "POST", "/admin/events/"+stubEventID+"/redeliver", nil,
		map[string]string{"Authorization": "Bearer wrong"}).Code)
	assert.Equal(t, calls+1, ev.calls)

	off := rawAPI(t, nil) // no such route: the document does not describe it
	assert.Equal(t, http.StatusNotFound, send(off, "GET", "/admin/events", nil, admin).Code)
}

// FuzzEventsQuery: whatever the query of GET /admin/events and POST
// /admin/events/{id}/redeliver holds, the answer is 200, 400 or 404, never
// a 5xx; a receiver that is not 1 to 128 printable ASCII characters is 400
// before the outbox is asked, and one that is reaches it as sent.
func FuzzEventsQuery(f *testing.F) {
	for _, s := range [][3]string{
		{"dead", "shop", "20"}, {"", "shop.example.com:8443/hooks?x", ""}, {"pending", "", "0"},
		{"delivered", "a b", "500"}, {"x", "é", "-1"}, {"", strings.Repeat("r", 129), ""}, {"", "\x00", "1"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	ev := &stubEvents{view: stubEventView(f)}
	h := testAPI(f, func(d *Deps) { d.Events = ev })
	admin := map[string]string{"Authorization": "Bearer " + testAdminToken}
	f.Fuzz(func(t *testing.T, status, receiver, limit string) {
		q := url.Values{}
		if status != "" {
			q.Set("status", status)
		}
		q.Set("receiver", receiver)
		if limit != "" {
			q.Set("limit", limit)
		}
		valid := receiver != "" && len(receiver) <= maxReceiverLen && strings.Trim(receiver, printableASCII) == ""
		for _, path := range []string{"/admin/events?", "/admin/events/" + stubEventID + "/redeliver?"} {
			method := http.MethodGet
			if strings.HasSuffix(path, "redeliver?") {
				method = http.MethodPost
			}
			calls := ev.calls
			w := send(h, method, path+q.Encode(), nil, admin)
			switch {
			case w.Code != http.StatusOK && w.Code != http.StatusBadRequest && w.Code != http.StatusNotFound:
				t.Fatalf("%s %s%s: %d %s", method, path, q.Encode(), w.Code, w.Body)
			case !valid && (w.Code != http.StatusBadRequest || ev.calls != calls):
				t.Fatalf("%s %s%s: %d, want 400 before the outbox", method, path, q.Encode(), w.Code)
			case valid && ev.calls != calls && ev.receiver != receiver:
				t.Fatalf("%s %s%s: the outbox got receiver %q", method, path, q.Encode(), ev.receiver)
			}
		}
	})
}

// printableASCII are the characters a receiver's name is made of.
var printableASCII = func() string {
	var b strings.Builder
	for c := byte('!'); c <= '~'; c++ {
		b.WriteByte(c)
	}
	return b.String()
}()
