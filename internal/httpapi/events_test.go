package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
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
	view   outbox.View
	calls  int
	status string
	after  uint64
	limit  int
}

const stubEventID = "evt_created_42-01hxd7k2m3n4p5q6r7s8t9v0"

// stubEventView is the order.created event of an order, pending.
func stubEventView(t *testing.T) outbox.View {
	t.Helper()
	at := time.Date(2026, 11, 11, 0, 0, 1, 0, time.UTC)
	o := order.AdminView{View: order.View{OrderID: "42-01hxd7k2m3n4p5q6r7s8t9v0", SKU: 42, User: "alice", Qty: 1,
		PriceCents: 100, Status: order.StatusPendingPayment, CreatedAt: at, ExpiresAt: at.Add(15 * time.Minute)}, Refund: order.RefundNone}
	e, err := outbox.New(outbox.OrderCreated, o.OrderID, "", at, outbox.OrderData{Order: o})
	require.NoError(t, err)
	return outbox.View{EventID: e.EventID, Type: e.Type, OrderID: e.OrderID, Status: outbox.StatusPending,
		CreatedAt: at, NextAt: &at, Event: json.RawMessage(e.Payload)}
}

func (s *stubEvents) List(_ context.Context, status string, after uint64, limit int) ([]outbox.View, uint64, error) {
	s.calls++
	s.status, s.after, s.limit = status, after, limit
	return nil, 17, nil
}

func (s *stubEvents) Redeliver(_ context.Context, eventID string) (outbox.View, error) {
	s.calls++
	if eventID != s.view.EventID {
		return outbox.View{}, outbox.ErrNotFound
	}
	return s.view, nil
}

// The list's filters and page reach the outbox as given, a redelivery
// answers the event, and every bad input is 400 before the outbox is asked.
func TestEventHandlers(t *testing.T) {
	ev := &stubEvents{view: stubEventView(t)}
	require.Equal(t, stubEventID, ev.view.EventID)
	h := testAPI(t, func(d *Deps) { d.Events = ev })
	admin := map[string]string{"Authorization": "Bearer " + testAdminToken}

	w := send(h, "GET", "/admin/events", nil, admin)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, outbox.StatusPending, ev.status)
	assert.Equal(t, defaultLimit, ev.limit)
	assert.Zero(t, ev.after)
	next := encodeCursor(17)
	assert.JSONEq(t, `{"items":[],"next_cursor":"`+next+`"}`, w.Body.String())

	w = send(h, "GET", "/admin/events?status=dead&limit=500&cursor="+next, nil, admin)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, outbox.StatusDead, ev.status)
	assert.Equal(t, outbox.MaxPage, ev.limit)
	assert.Equal(t, uint64(17), ev.after)

	w = send(h, "POST", "/admin/events/"+stubEventID+"/redeliver", nil, admin)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var v outbox.View
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &v))
	assert.Equal(t, stubEventID, v.EventID)

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
