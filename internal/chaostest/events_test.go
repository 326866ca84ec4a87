package chaostest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/seckill/seckill/internal/webhook"
)

var eventSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("chaos-order-events-0123456789abcd"))

// eventSink is the shop's receiver of a lane's order events: it checks
// every signature, refuses one delivery in five (the dispatcher retries),
// and keeps the event ids it acknowledged. With events on, each barrier's
// `seckill verify` checks that every order change in MySQL has its event
// and every event its change; the end of the run checks that the receiver
// got every order's order.created.
type eventSink struct {
	srv     *httptest.Server
	mu      sync.Mutex
	rng     *rand.Rand
	created map[string]bool // order ids whose order.created was acknowledged
	bad     []string        // deliveries whose signature or body was wrong
}

func startEvents(l *lane) *eventSink {
	v, err := webhook.NewVerifier([]string{eventSecret})
	if err != nil {
		l.t.Fatal(err)
	}
	// Its own seed: the lane's schedule stays what the run seed makes it.
	s := &eventSink{rng: rand.New(rand.NewSource(runSeed + int64(len(l.spec.name)))), created: map[string]bool{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Data struct {
				Order struct {
					OrderID string `json:"order_id"`
				} `json:"order"`
			} `json:"data"`
		}
		err := v.Verify(body, r.Header)
		if err == nil {
			err = json.Unmarshal(body, &m)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil || m.ID != r.Header.Get(webhook.HeaderID) {
			s.bad = append(s.bad, r.Header.Get(webhook.HeaderID))
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if s.rng.Intn(5) == 0 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if m.Type == "order.created" {
			s.created[m.Data.Order.OrderID] = true
		}
	}))
	l.t.Cleanup(s.srv.Close)
	l.env["SECKILL_EVENTS_WEBHOOK_URL"] = s.srv.URL
	l.env["SECKILL_EVENTS_WEBHOOK_SECRET"] = eventSecret
	l.env["SECKILL_EVENTS_BACKOFF_MIN"] = "100ms"
	l.env["SECKILL_EVENTS_BACKOFF_MAX"] = "2s"
	l.env["SECKILL_EVENTS_TIMEOUT"] = "2s"
	return s
}

// check waits (up to a minute) until the receiver has acknowledged the
// order.created of every order in MySQL, and reports what it lacks and
// every delivery it could not verify.
func (s *eventSink) check(l *lane) {
	deadline := time.Now().Add(time.Minute)
	var missing []string
	for {
		ids, err := l.orderIDs()
		if err != nil {
			l.viol.add("events", "read orders: %v", err)
			return
		}
		s.mu.Lock()
		missing = missing[:0]
		for _, id := range ids {
			if !s.created[id] {
				missing = append(missing, id)
			}
		}
		bad := append([]string(nil), s.bad...)
		s.mu.Unlock()
		if len(bad) > 0 {
			l.viol.add("events", "%d event deliveries with a bad signature or body: %v", len(bad), bad[:min(len(bad), 5)])
			return
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			l.viol.add("events", "%d orders in MySQL whose order.created the receiver never acknowledged: %v", len(missing), missing[:min(len(missing), 5)])
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// orderIDs reads the ids of the orders MySQL has, failed ones aside (they
// send order.failed instead).
func (l *lane) orderIDs() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := l.db.QueryContext(ctx, "SELECT order_id FROM orders WHERE status <> 'failed'")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
