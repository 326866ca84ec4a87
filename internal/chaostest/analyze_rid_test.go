package chaostest

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A request id whose first order a live primary accepted while the
// Sentinels replaced it, replayed after into a second order, is explained
// by the replacement, in the answers and in MySQL alike; with no such
// replacement it is a violation.
func TestARequestIDTheReplacementForgotIsExplained(t *testing.T) {
	t0 := time.Unix(1_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for _, live := range []bool{true, false} {
		first := &op{id: 1, kind: opBuy, user: "u1", sku: 1, qty: 1, rid: "r1", attempt: 1,
			call: at(49.6), ret: at(49.7), status: http.StatusAccepted, outOrder: "o1"}
		replay := &op{id: 2, kind: opBuy, user: "u1", sku: 1, qty: 1, rid: "r1", attempt: 2,
			call: at(50.6), ret: at(50.7), status: http.StatusAccepted, outOrder: "o2"}
		rows := map[string]*orderRow{
			"o1": {id: "o1", sku: 1, user: "u1", rid: "r1", qty: 1, status: "cancelled", created: at(49.65)},
			"o2": {id: "o2", sku: 1, user: "u1", rid: "r1", qty: 1, status: "expired", created: at(50.65)},
		}
		// A freeze past the Sentinels' down-after: they promoted a replica
		// while the old primary went on answering.
		freeze := fault{kind: "primary-freeze", from: at(48), to: at(48.9), failover: true, live: live, switched: at(49.5)}
		a := &analysis{l: &lane{viol: &violations{}}, ops: []*op{first, replay}, faults: []fault{freeze},
			final: &snapshot{orders: rows}, known: rows, acked: map[string]*op{"o1": first, "o2": replay}}
		a.checkRequestIDs()
		if live {
			assert.Empty(t, a.l.viol.all())
			assert.Len(t, a.ridLive, 2, "the replay, and the two orders in MySQL")
		} else {
			kinds := map[string]int{}
			for _, v := range a.l.viol.all() {
				kinds[v.kind]++
			}
			assert.Equal(t, map[string]int{"request_id": 2}, kinds, "the replay, and the two orders in MySQL")
			assert.Empty(t, a.ridLive)
		}
	}
}

// A buy sent without a request id whose 503 named srv-<order id>, retried
// with that id and answered 202 with the order the first attempt made:
// that order carries no request id in MySQL, and it is no violation; one
// carrying no request id that the srv- id does not name is.
func TestTheOrderASrvRequestIDNamesCarriesNone(t *testing.T) {
	t0 := time.Unix(1_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for _, named := range []string{"1-0000000000000000000000o1", "1-0000000000000000000000o9"} {
		first := &op{id: 1, kind: opBuy, user: "u1", sku: 1, qty: 1, attempt: 1,
			call: at(10), ret: at(10.2), status: http.StatusServiceUnavailable, code: "unavailable", outRID: "srv-" + named}
		retry := &op{id: 2, kind: opBuy, user: "u1", sku: 1, qty: 1, rid: "srv-" + named, attempt: 2,
			call: at(11), ret: at(11.1), status: http.StatusAccepted, outOrder: "1-0000000000000000000000o1"}
		rows := map[string]*orderRow{
			"1-0000000000000000000000o1": {id: "1-0000000000000000000000o1", sku: 1, user: "u1", qty: 1, status: "pending_payment", created: at(10.1)},
		}
		a := &analysis{l: &lane{viol: &violations{}}, ops: []*op{first, retry},
			final: &snapshot{orders: rows}, known: rows, acked: map[string]*op{"1-0000000000000000000000o1": retry}}
		a.checkRequestIDs()
		if named == "1-0000000000000000000000o1" {
			assert.Empty(t, a.l.viol.all())
		} else {
			assert.Len(t, a.l.viol.all(), 1)
		}
	}
}

// The model's replays: a retry by the srv- id a 503 named finds the order
// its first attempt made without a request id, and a retry by a client's
// id the orders carrying it.
func TestTheModelsReplaysBySrvRequestID(t *testing.T) {
	b := &builder{index: map[string]int{}, users: map[string]int{}}
	first := b.order("7-0000000000000000000000o1", "u1", 1, "")
	retried := b.order("7-0000000000000000000000o2", "u1", 1, "srv-7-0000000000000000000000o9")
	own := b.order("7-0000000000000000000000o3", "u1", 1, "r1")
	assert.Equal(t, []int{first}, b.ridSet("u1", "srv-7-0000000000000000000000o1"))
	assert.Equal(t, []int{retried}, b.ridSet("u1", "srv-7-0000000000000000000000o9"))
	assert.Equal(t, []int{own}, b.ridSet("u1", "r1"))
	assert.Empty(t, b.ridSet("u2", "srv-7-0000000000000000000000o1"), "another shopper's")
}
