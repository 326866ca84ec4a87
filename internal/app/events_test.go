package app

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/outbox"
	"github.com/seckill/seckill/internal/testutil"
	"github.com/seckill/seckill/internal/webhook"
)

// hookSecret is the key seckill signs the events it sends the shop with.
var hookSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("seckill-events-key-0123456789abc"))

// hookReceiver is the shop's webhook receiver: it answers every delivery with
// its current status and keeps what it got.
type hookReceiver struct {
	url    string
	status atomic.Int32
	mu     sync.Mutex
	got    []hookDelivery
}

// hookDelivery is one POST the receiver got.
type hookDelivery struct {
	id       string // webhook-id
	body     []byte
	signed   error // the signature's check against hookSecret
	answered int
}

func newHookReceiver(t *testing.T, status int) *hookReceiver {
	t.Helper()
	verifier, err := webhook.NewVerifier([]string{hookSecret})
	require.NoError(t, err)
	r := &hookReceiver{}
	r.status.Store(int32(status))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		d := hookDelivery{id: req.Header.Get("webhook-id"), body: body, signed: verifier.Verify(body, req.Header),
			answered: int(r.status.Load())}
		r.mu.Lock()
		r.got = append(r.got, d)
		r.mu.Unlock()
		w.WriteHeader(d.answered)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

func (r *hookReceiver) answer(status int) { r.status.Store(int32(status)) }

// deliveries returns the deliveries of event id so far.
func (r *hookReceiver) deliveries(id string) []hookDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hookDelivery
	for _, d := range r.got {
		var m outbox.Message
		if json.Unmarshal(d.body, &m) == nil && m.ID == id {
			out = append(out, d)
		}
	}
	return out
}

// startWithEvents starts a deployment sending its events to rec, retrying a
// refusal within a fraction of a second.
func startWithEvents(t *testing.T, rec *hookReceiver) *deployment {
	t.Helper()
	return startSale(t, saleOpts{env: map[string]string{
		"SECKILL_EVENTS_WEBHOOK_URL":    rec.url,
		"SECKILL_EVENTS_WEBHOOK_SECRET": hookSecret,
		"SECKILL_EVENTS_BACKOFF_MIN":    "50ms",
		"SECKILL_EVENTS_BACKOFF_MAX":    "200ms",
	}})
}

// listEvents lists the events with status, every page, limit events a page.
func (s *deployment) listEvents(status string, limit int) []outbox.View {
	s.t.Helper()
	var all []outbox.View
	path := "/admin/events?status=" + status + "&limit=" + strconv.Itoa(limit)
	for cursor := ""; ; {
		p := path
		if cursor != "" {
			p += "&cursor=" + cursor
		}
		r := s.do(0, "GET", p, "", nil)
		require.Equal(s.t, http.StatusOK, r.Status, r.Raw)
		var page struct {
			Items      []outbox.View `json:"items"`
			NextCursor string        `json:"next_cursor"`
		}
		require.NoError(s.t, json.Unmarshal([]byte(r.Raw), &page))
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all
		}
		cursor = page.NextCursor
	}
}

// waitEvent polls the list of status until it has event id, as ok wants
// it when ok is set, and returns it.
func (s *deployment) waitEvent(status, id string, ok func(outbox.View) bool) outbox.View {
	s.t.Helper()
	var last []outbox.View
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		last = s.listEvents(status, outbox.MaxPage)
		for _, v := range last {
			if v.EventID == id && (ok == nil || ok(v)) {
				return v
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("event %s never listed %s as wanted; listed: %+v", id, status, last)
	return outbox.View{}
}

// eventListed reports whether the list of status has event id.
func (s *deployment) eventListed(status, id string) bool {
	s.t.Helper()
	for _, v := range s.listEvents(status, outbox.MaxPage) {
		if v.EventID == id {
			return true
		}
	}
	return false
}

// redeliveries reads the answer of POST /admin/events/{id}/redeliver.
func redeliveries(t *testing.T, r testutil.Reply) []outbox.View {
	t.Helper()
	var got struct {
		Items []outbox.View `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Raw), &got))
	return got.Items
}

// checkWebhookBody checks a delivered body against the document's webhook op.
func checkWebhookBody(t *testing.T, op string, body []byte) {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.YAML)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(loader.Context))
	hook := doc.Webhooks[op]
	require.NotNil(t, hook, op)
	var v any
	require.NoError(t, json.Unmarshal(body, &v))
	schema := hook.Post.RequestBody.Value.Content.Get("application/json").Schema.Value
	assert.NoError(t, schema.VisitJSON(v, openapi3.EnableJSONSchema2020()), "%s: %s", op, body)
}

// An order's events as the shop gets them and an operator sees them: its
// order.created stays pending while the receiver refuses it, is delivered
// once it accepts, with the same webhook-id on every try; a dead event is
// listed as dead and redelivered by hand; a delivered one can be sent again.
func TestEventsListedDeliveredAndRedelivered(t *testing.T) {
	rec := newHookReceiver(t, http.StatusInternalServerError)
	s := startWithEvents(t, rec)
	sku := s.seed(10, 2)
	id, _ := s.pendingOrder(sku, "alice")
	created := "evt_created_" + id

	v := s.waitEvent(outbox.StatusPending, created, func(v outbox.View) bool { return v.Attempts >= 2 })
	assert.Equal(t, outbox.OrderCreated, v.Type)
	assert.Equal(t, id, v.OrderID)
	require.NotNil(t, v.LastError)
	assert.Contains(t, *v.LastError, "500")
	assert.NotNil(t, v.NextAt)
	assert.Nil(t, v.DeliveredAt)
	var msg struct {
		outbox.Message
		Data struct {
			Order order.AdminView `json:"order"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(v.Event, &msg))
	assert.Equal(t, created, msg.ID)
	assert.Equal(t, outbox.OrderCreated, msg.Type)
	assert.Equal(t, id, msg.Data.Order.OrderID)
	assert.Equal(t, order.StatusPendingPayment, msg.Data.Order.Status)
	assert.Equal(t, order.RefundNone, msg.Data.Order.Refund)
	assert.False(t, s.eventListed(outbox.StatusDelivered, created))

	rec.answer(http.StatusOK)
	v = s.waitEvent(outbox.StatusDelivered, created, nil)
	require.NotNil(t, v.DeliveredAt)
	assert.Nil(t, v.NextAt)
	assert.False(t, s.eventListed(outbox.StatusPending, created))
	got := rec.deliveries(created)
	require.GreaterOrEqual(t, len(got), 3, "refused twice at least, then accepted")
	for _, d := range got {
		assert.Equal(t, created, d.id, "the same webhook-id on every try")
		assert.NoError(t, d.signed)
		assert.JSONEq(t, string(v.Event), string(d.body), "the body the admin list shows")
	}
	assert.Equal(t, http.StatusOK, got[len(got)-1].answered)
	checkWebhookBody(t, "orderCreated", got[0].body)

	// The shopper cancels while the receiver refuses; the event outlives
	// events.max_age (made so in SQL), and is dead until redelivered.
	rec.answer(http.StatusServiceUnavailable)
	require.Equal(t, http.StatusOK, s.do(0, "POST", "/api/v1/orders/"+id+"/cancel", "alice", nil).Status)
	cancelled := "evt_cancelled_" + id
	s.waitEvent(outbox.StatusPending, cancelled, func(v outbox.View) bool { return v.Attempts >= 1 })
	require.Eventually(t, func() bool {
		res := s.apps[0].DB.Model(&outbox.Delivery{}).
			Where("event_row = (SELECT id FROM outbox WHERE event_id = ?) AND lease_owner IS NULL", cancelled).
			Update("status", outbox.StatusDead)
		require.NoError(t, res.Error)
		return res.RowsAffected == 1
	}, 10*time.Second, 10*time.Millisecond, "marked dead between two deliveries")
	dead := s.waitEvent(outbox.StatusDead, cancelled, nil)
	assert.Nil(t, dead.NextAt)
	require.NotNil(t, dead.LastError)
	assert.Contains(t, *dead.LastError, "503")
	assert.False(t, s.eventListed(outbox.StatusPending, cancelled))

	rec.answer(http.StatusNoContent)
	r := s.do(0, "POST", "/admin/events/"+cancelled+"/redeliver?receiver="+dead.Receiver, "", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	redelivered := redeliveries(t, r)
	require.Len(t, redelivered, 1)
	assert.Equal(t, cancelled, redelivered[0].EventID)
	assert.Equal(t, dead.Receiver, redelivered[0].Receiver)
	assert.Equal(t, outbox.StatusPending, redelivered[0].Status)
	assert.NotNil(t, redelivered[0].NextAt)
	assert.Equal(t, dead.Attempts, redelivered[0].Attempts, "its attempts are kept")
	s.waitEvent(outbox.StatusDelivered, cancelled, nil)
	got = rec.deliveries(cancelled)
	require.NotEmpty(t, got)
	assert.Equal(t, http.StatusNoContent, got[len(got)-1].answered)
	for _, d := range got {
		assert.Equal(t, cancelled, d.id)
		assert.NoError(t, d.signed)
	}
	checkWebhookBody(t, "orderCancelled", got[0].body)
	assert.False(t, s.eventListed(outbox.StatusDead, cancelled))

	// A delivered event sent again, for a receiver that lost it: the same
	// id and body.
	before := len(rec.deliveries(created))
	r = s.do(0, "POST", "/admin/events/"+created+"/redeliver", "", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	redelivered = redeliveries(t, r)
	require.Len(t, redelivered, 1, "to every receiver: the one there is")
	assert.Equal(t, outbox.StatusPending, redelivered[0].Status)
	assert.Nil(t, redelivered[0].DeliveredAt)
	s.waitEvent(outbox.StatusDelivered, created, nil)
	got = rec.deliveries(created)
	require.Greater(t, len(got), before)
	assert.Equal(t, created, got[len(got)-1].id)
	assert.Equal(t, got[0].body, got[len(got)-1].body)

	// Pages of one event follow each other by cursor.
	assert.Len(t, s.listEvents(outbox.StatusDelivered, 1), 2)
}

// What an operator gets for bad input or without the admin token: 400
// invalid_request (404 not_found for an unknown id), nothing changed.
func TestEventsAdminBadInput(t *testing.T) {
	rec := newHookReceiver(t, http.StatusInternalServerError)
	s := startWithEvents(t, rec)
	sku := s.seed(10, 2)
	id, _ := s.pendingOrder(sku, "bob")
	created := "evt_created_" + id
	s.waitEvent(outbox.StatusPending, created, nil)

	for _, q := range []string{
		"status=bogus", "status=", "status=PENDING", "status=pending,dead",
		"limit=0", "limit=501", "limit=-1", "limit=ten", "limit=",
		"cursor=", "cursor=nope", "cursor=" + strings.Repeat("A", 100),
		"cursor=" + base64.RawURLEncoding.EncodeToString([]byte("sku:0")),
		"cursor=" + base64.RawURLEncoding.EncodeToString([]byte("sku:18446744073709551615")),
		"receiver=", "receiver=a%20b", "receiver=%C3%A9", "receiver=" + strings.Repeat("r", 129),
	} {
		r := s.do(0, "GET", "/admin/events?"+q, "", nil)
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", q, r.Raw)
		assert.Equal(t, "invalid_request", r.Str("error"), q)
		assert.NotEmpty(t, r.Str("detail"), q)
	}
	for _, bad := range []string{
		"nope", "evt_", "EVT_created_1", "evt_a%20b", "evt_a%2Bb", "evt_%C3%A9", "evt_a%22b",
		"evt_" + strings.Repeat("x", 125), "evt_" + strings.Repeat("x", 4000),
	} {
		r := s.do(0, "POST", "/admin/events/"+bad+"/redeliver", "", nil)
		assert.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", bad, r.Raw)
		assert.Equal(t, "invalid_request", r.Str("error"), bad)
	}
	for _, unknown := range []string{"evt_created_1-00000000000000000000000000", "evt_" + strings.Repeat("x", 124)} {
		r := s.do(0, "POST", "/admin/events/"+unknown+"/redeliver", "", nil)
		assert.Equal(t, http.StatusNotFound, r.Status, "%s: %s", unknown, r.Raw)
		assert.Equal(t, "not_found", r.Str("error"), unknown)
	}
	for _, p := range []string{
		"/admin/events/" + created + "/redeliver?receiver=nobody",
		"/admin/events/" + created + "/redeliver?receiver=*",
	} {
		r := s.do(0, "POST", p, "", nil)
		assert.Equal(t, http.StatusNotFound, r.Status, "%s: %s", p, r.Raw)
		assert.Equal(t, "not_found", r.Str("error"), p)
		assert.Contains(t, r.Str("detail"), "receiver", p)
	}
	r := s.do(0, "GET", "/admin/events?receiver=nobody", "", nil)
	assert.Equal(t, http.StatusNotFound, r.Status, r.Raw)
	assert.Equal(t, "not_found", r.Str("error"))

	for _, c := range []struct{ method, path, auth string }{
		{"GET", "/admin/events", ""},
		{"GET", "/admin/events?status=dead", "Bearer not-the-token"},
		{"POST", "/admin/events/" + created + "/redeliver", ""},
		{"POST", "/admin/events/" + created + "/redeliver", "Basic " + adminToken},
	} {
		req, err := http.NewRequest(c.method, s.urls[0]+c.path, nil)
		require.NoError(t, err)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		r, err := s.caller().Send(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, r.Status, "%s %s %q: %s", c.method, c.path, c.auth, r.Raw)
		assert.Equal(t, "unauthorized", r.Str("error"))
	}

	var e outbox.Event
	require.NoError(t, s.apps[0].DB.Take(&e, "event_id = ?", created).Error)
	var d outbox.Delivery
	require.NoError(t, s.apps[0].DB.Take(&d, "event_row = ?", e.ID).Error)
	assert.Equal(t, outbox.StatusPending, d.Status, "nothing was redelivered by hand")
	assert.True(t, e.CreatedAt.Equal(d.WindowFrom), "nor its retry window restarted")
}

// With events off the endpoints answer, on an empty outbox.
func TestEventsAdminWithEventsOff(t *testing.T) {
	s := startSale(t, saleOpts{})
	sku := s.seed(10, 2)
	id, _ := s.pendingOrder(sku, "carol")
	for _, status := range []string{"", "?status=pending", "?status=delivered", "?status=dead", "/receivers"} {
		r := s.do(0, "GET", "/admin/events"+status, "", nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		assert.JSONEq(t, `{"items":[]}`, r.Raw)
	}
	r := s.do(0, "POST", "/admin/events/evt_created_"+id+"/redeliver", "", nil)
	assert.Equal(t, http.StatusNotFound, r.Status, r.Raw)
	assert.Equal(t, "not_found", r.Str("error"))
	var n int64
	require.NoError(t, s.apps[0].DB.Model(&outbox.Event{}).Count(&n).Error)
	assert.Zero(t, n)
}
