package chaostest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// tick is the slack on times MySQL stores (DATETIME(3): milliseconds,
// truncated).
const tick = 2 * time.Millisecond

// analysis is the end-of-run check of the whole history against MySQL.
type analysis struct {
	l      *lane
	ops    []*op
	faults []fault
	losses []fault // faults in which Redis lost its data
	final  *snapshot
	// known are the orders of MySQL at the end and those of the dead
	// letters the run listed that never reached MySQL (status "dead").
	known map[string]*orderRow
	// deleted are the orders an operator deleted with their dead letter
	// (a delete answered 200, or one without a clear answer whose order
	// never reached MySQL), with when the delete was sent.
	deleted map[string]time.Time

	acked   map[string]*op   // order id -> the first 202 that named it
	creator map[string][]*op // order in MySQL without a 202 -> requests that may have made it
	makes   map[*op][]string // the reverse: request -> orders it may have made
	// retried are the orders that 202s to the request id a buy's 503 named
	// (the id the server made for it) answered: that buy may have made
	// them, also one Redis lost before it reached MySQL (then not in makes).
	retried map[*op][]string

	// What a data loss excuses, counted and listed, never hidden.
	lost         []string // 202 orders not in MySQL: still in Redis when it lost its data
	refusedLoss  []string // 202 orders refused by the stock guard (failed) that were in Redis at a loss
	refusedAfter []string // orders accepted after a loss and refused because an order from before it reached MySQL
	// What the replacement of a live Sentinel primary excuses (fault.live).
	lostLive    []string // 202 orders not in MySQL, accepted while the old primary still answered
	refusedLive []string // orders refused by the stock guard in the phase of the replacement, after it began
	ridLoss     []string // request ids whose replay got another order or a refusal after a loss forgot them
	limitLoss   []string // shoppers over the limit with an order that was in Redis at a loss
	unacked     int      // orders in MySQL whose request got no clear answer
	// What an operator's delete of a dead letter excuses.
	gone    []string // 202 orders deleted with their dead letter (recorded failed, or not in MySQL)
	ridGone []string // request ids whose replay after the delete got another answer
	ridLive []string // request ids whose order the replacement of a live primary lost, replayed
}

// analyze checks the lane's whole history, logs its summary and returns
// its linearizability checks.
func (l *lane) analyze() []linResult {
	ops, faults := l.hist.snapshot()
	a := &analysis{l: l, ops: ops, faults: faults, final: l.snaps[len(l.snaps)-1],
		acked: map[string]*op{}, creator: map[string][]*op{}, makes: map[*op][]string{}, retried: map[*op][]string{},
		known: map[string]*orderRow{}, deleted: map[string]time.Time{}}
	for _, f := range faults {
		if f.dataLoss {
			a.losses = append(a.losses, f)
		}
	}
	for id, row := range a.final.orders {
		a.known[id] = row
	}
	l.deadMu.Lock()
	for _, d := range l.dead {
		for _, t := range d.orders {
			if a.known[t.OrderID] == nil {
				a.known[t.OrderID] = &orderRow{id: t.OrderID, sku: t.SKU, user: t.User, rid: t.RequestID, qty: t.Qty,
					status: "dead", created: time.UnixMilli(t.CreatedMS)}
			}
		}
	}
	l.deadMu.Unlock()
	for _, o := range ops {
		if o.kind != opDeadDel || (o.answered() && o.status != http.StatusOK && o.status != http.StatusServiceUnavailable) {
			continue
		}
		d := l.deadLetterOf(o.task)
		if d == nil {
			continue
		}
		for _, t := range d.orders {
			if row := a.final.orders[t.OrderID]; row != nil && !droppedBy(row, o.call) {
				continue
			}
			if at, ok := a.deleted[t.OrderID]; !ok || o.call.Before(at) {
				a.deleted[t.OrderID] = o.call
			}
		}
	}
	for _, o := range ops {
		if o.kind == opBuy && o.status == http.StatusAccepted {
			if prev, ok := a.acked[o.outOrder]; !ok || o.ret.Before(prev.ret) {
				a.acked[o.outOrder] = o
			}
		}
	}
	a.checkAnswers()
	a.checkStock()
	a.checkAcked()
	a.resolveUnacked()
	a.resolveRetried()
	a.checkLimits()
	a.checkRequestIDs()
	a.checkOrderOutcomes()
	a.checkRefusedTokens()
	lin := a.checkLinearizable()
	a.summary(lin)
	return lin
}

// exposed reports whether the order accepted by a request sent at call was
// only in Redis when Redis lost its data: the loss ended after the call,
// and the order was not in MySQL just before the loss began.
func (a *analysis) exposed(id string, call time.Time) (fault, bool) {
	for _, f := range a.losses {
		if exposedTo(f, id, call) {
			return f, true
		}
	}
	return fault{}, false
}

func exposedTo(f fault, id string, call time.Time) bool {
	return !call.After(f.to) && !f.committed[id]
}

// lossBetween reports whether Redis lost its data between from and to.
func (a *analysis) lossBetween(from, to time.Time) bool {
	for _, f := range a.losses {
		if f.from.After(from) && f.to.Before(to) {
			return true
		}
	}
	return false
}

// callOf is when the request that made an order was sent: its 202, or
// (for an order whose request got no clear answer) its creation time.
func (a *analysis) callOf(id string) time.Time {
	if o, ok := a.acked[id]; ok {
		return o.call
	}
	if row := a.known[id]; row != nil {
		return row.created
	}
	return time.Time{}
}

// droppedBy reports whether row is the failed row that an operator's
// delete of its dead letter, sent at call, wrote: a drop records each
// order of the letter that is not in MySQL as failed, after the call. A
// row the stock guard refused was written by a worker whose batch began
// before its task was dead-lettered.
func droppedBy(row *orderRow, call time.Time) bool {
	return row.status == "failed" && !row.persisted.Before(call.Add(-time.Millisecond))
}

// goneBy reports whether an operator's delete of the order's dead letter
// was sent before t.
func (a *analysis) goneBy(id string, t time.Time) bool {
	at, ok := a.deleted[id]
	return ok && !at.After(t)
}

// leak matches what an error body must never show a shopper.
var leak = regexp.MustCompile(`(?i)redis|mysql|sql|dial|tcp|127\.0\.0\.1|refused|timeout|goroutine|panic|\.go:|i/o`)

// checkAnswers checks every answer against the API's table: no 500, no
// answer the run's requests cannot get (bad request, unknown SKU, rate
// limit, sale window; 401 only for a refused token, checkRefusedTokens),
// and 5xx bodies that are {"error","detail"} and name nothing internal.
// A buy's 503 may carry the request_id to retry with: the one sent, or one
// the server made; once a server sends one, every buy's 503 unavailable
// must.
func (a *analysis) checkAnswers() {
	ridFeature := false
	for _, o := range a.ops {
		ridFeature = ridFeature || (o.kind == opBuy && o.outRID != "")
	}
	for _, o := range a.ops {
		if !o.answered() || o.badToken != "" {
			continue
		}
		switch {
		case o.status >= 500 && o.status != http.StatusServiceUnavailable:
			a.l.viol.addSKU(o.sku, "answer", "%s: %s", o, o.raw)
		case o.status >= 500:
			if msg := badBody(o); msg != "" {
				a.l.viol.addSKU(o.sku, "answer", "%s: 503 body %s: %s", o, msg, o.raw)
			} else if ridFeature && o.kind == opBuy && o.code == "unavailable" && o.outRID == "" {
				a.l.viol.addSKU(o.sku, "answer", "%s: a buy's 503 unavailable without the request_id to retry with: %s", o, o.raw)
			}
		case o.status == http.StatusBadRequest, o.status == http.StatusUnauthorized, o.status == http.StatusForbidden,
			o.status == http.StatusTooManyRequests, o.status == http.StatusRequestEntityTooLarge:
			a.l.viol.addSKU(o.sku, "answer", "%s: unexpected for this request: %s", o, o.raw)
		case o.status == http.StatusNotFound && o.code != "not_found":
			a.l.viol.addSKU(o.sku, "answer", "%s: %s", o, o.raw)
		}
		if o.status == http.StatusNotFound && o.order != "" && !a.goneBy(o.order, o.ret) && !a.lostWhileLive(o.order) {
			if _, ok := a.exposed(o.order, a.callOf(o.order)); !ok {
				a.l.viol.addSKU(o.sku, "lost", "%s: an accepted order is not found, and no data loss or delete of its dead letter explains it", o)
			}
		}
		if (o.kind == opSetStock || o.kind == opUpsert) && o.status == http.StatusOK && o.outTotal != o.total {
			a.l.viol.addSKU(o.sku, "answer", "%s: answered stock_total %d", o, o.outTotal)
		}
	}
}

// badBody says what is wrong with a 503's body, "" if nothing: it is
// {"error","detail"}, plus for a buy the request_id to retry with (the one
// the buy sent, if it sent one), and names nothing internal.
func badBody(o *op) string {
	var body map[string]any
	if err := json.Unmarshal([]byte(o.raw), &body); err != nil {
		return "is not a JSON object"
	}
	fields := 2
	if v, ok := body["request_id"]; ok {
		rid, _ := v.(string)
		switch {
		case o.kind != opBuy:
			return "has a request_id outside a buy"
		case rid == "":
			return "has an empty request_id"
		case o.rid != "" && rid != o.rid:
			return "names another request_id than the one sent"
		}
		fields = 3
	}
	e, _ := body["error"].(string)
	d, _ := body["detail"].(string)
	switch {
	case len(body) != fields || e == "" || d == "":
		return "must be {error, detail} (and a buy's request_id)"
	case leak.MatchString(e + " " + d):
		return "names something internal"
	}
	return ""
}

// checkRefusedTokens: a request with an expired or forged token is
// answered 401 with the detail that says why, and changes nothing: no
// order carries a refused buy's request id (the lane's cancels and
// payments with such tokens are left out of every other check, so an
// effect of theirs shows there).
func (a *analysis) checkRefusedTokens() {
	rids := map[string]*op{}
	for _, o := range a.ops {
		if o.badToken == "" || !o.answered() {
			continue
		}
		if o.status != http.StatusUnauthorized || o.code != "unauthorized" || !strings.Contains(o.raw, tokenDetail[o.badToken]) {
			a.l.viol.addSKU(o.sku, "auth", "%s: a %s token must be answered 401 unauthorized %q: %s", o, o.badToken, tokenDetail[o.badToken], o.raw)
		}
		if o.kind == opBuy {
			rids[o.user+"/"+o.rid] = o
		}
	}
	for id, row := range a.known {
		if o := rids[row.user+"/"+row.rid]; o != nil {
			a.l.viol.addSKU(o.sku, "auth", "%s: order %s (%s) carries the request id of a buy with a refused token", o, id, row.status)
		}
	}
}

// checkStock: never oversold in MySQL, at every barrier and at the end.
func (a *analysis) checkStock() {
	for _, s := range a.l.snaps {
		for id, r := range s.skus {
			if r.sold > r.total {
				a.l.viol.addSKU(id, "oversold", "barrier %d: sku %d sold %d > stock_total %d", s.n, id, r.sold, r.total)
			}
			active := int64(0)
			for _, o := range s.orders {
				if o.sku == id && o.active() {
					active += int64(o.qty)
				}
			}
			if active != r.sold {
				a.l.viol.addSKU(id, "sold", "barrier %d: sku %d sold %d != units of active orders %d", s.n, id, r.sold, active)
			}
		}
	}
}

// checkAcked: every order answered 202 is one row in MySQL, with its
// shopper, SKU and qty, and not failed — unless Redis lost it first.
func (a *analysis) checkAcked() {
	ids := sortedKeys(a.acked)
	for _, id := range ids {
		o := a.acked[id]
		row := a.final.orders[id]
		// A 202 that replays a request id answers an order made earlier,
		// by an attempt whose answer left its outcome unknown: a loss
		// since the order was made is what may have refused it.
		since := o.call
		if row != nil && row.created.Before(since) {
			since = row.created
		}
		f, exposed := a.exposed(id, since)
		switch {
		case row == nil && exposed:
			a.lost = append(a.lost, fmt.Sprintf("%s (%s; %s)", id, o, f))
		case row == nil && a.whileLive(o.call):
			a.lostLive = append(a.lostLive, fmt.Sprintf("%s (%s)", id, o))
		case row == nil && a.goneBy(id, time.Now()):
			a.gone = append(a.gone, fmt.Sprintf("%s (%s)", id, o))
		case row == nil:
			a.l.viol.addSKU(o.sku, "lost", "%s: accepted, not in MySQL, and no data loss or delete of its dead letter explains it", o)
		case row.user != o.user || row.sku != o.sku || row.qty != o.qty:
			a.l.viol.addSKU(o.sku, "order", "%s: MySQL has user %s sku %d qty %d", o, row.user, row.sku, row.qty)
		case row.status == "failed" && a.goneBy(id, time.Now()):
			a.gone = append(a.gone, fmt.Sprintf("%s (%s; recorded failed)", id, o))
		case row.status == "failed" && exposed:
			a.refusedLoss = append(a.refusedLoss, fmt.Sprintf("%s (%s; %s)", id, o, f))
		case row.status == "failed" && a.collateral(row, o.call):
			a.refusedAfter = append(a.refusedAfter, fmt.Sprintf("%s (%s)", id, o))
		case row.status == "failed" && a.afterLive(o.call):
			a.refusedLive = append(a.refusedLive, fmt.Sprintf("%s (%s)", id, o))
		case row.status == "failed":
			a.l.viol.addSKU(o.sku, "refused", "%s: accepted and then refused by the stock guard (failed), and no data loss explains it", o)
		}
	}
}

// collateral reports whether a refused order sent at call was refused
// because of a data loss before it: in the same phase, after the loss, and
// an order of the same SKU that was only in Redis at the loss (a batch a
// worker held across it) reached MySQL after it, taking a unit the rebuilt
// Redis sold again.
func (a *analysis) collateral(row *orderRow, call time.Time) bool {
	for _, f := range a.losses {
		if call.Before(f.from) || a.phaseOf(f.from) != a.phaseOf(call) {
			continue
		}
		for id, z := range a.final.orders {
			if z.sku != row.sku || z.status == "failed" || id == row.id {
				continue
			}
			if exposedTo(f, id, a.callOf(id)) {
				return true
			}
		}
	}
	return false
}

// liveGrace is how long after the run saw a new primary the seckill
// processes may still send to the old one: each learns of the switch from
// the Sentinels on its own.
const liveGrace = 2 * time.Second

// whileLive reports whether a request sent at call may have been answered
// by a live primary the Sentinels were replacing (fault.live): from the
// replacement's start until a moment after the new primary was seen.
func (a *analysis) whileLive(call time.Time) bool {
	for _, f := range a.faults {
		if f.live && !call.Before(f.from) && (f.switched.IsZero() || call.Before(f.switched.Add(liveGrace))) {
			return true
		}
	}
	return false
}

// lostWhileLive reports whether order is not in MySQL and was accepted
// while a live primary was being replaced (checkAcked lists it in
// lostLive): its 404s and its request id's next order follow from that.
func (a *analysis) lostWhileLive(order string) bool {
	o, ok := a.acked[order]
	return ok && a.final.orders[order] == nil && a.whileLive(o.call)
}

// afterLive reports whether an order sent at call and refused by the stock
// guard may owe it to the replacement of a live primary: in the same
// phase, after it began. The units the old primary sold until it was
// demoted reached MySQL through the drain while the new primary, which
// never had them, sold them again; the guard's refusal rebuilds the SKU.
func (a *analysis) afterLive(call time.Time) bool {
	for _, f := range a.faults {
		if f.live && !call.Before(f.from) && a.phaseOf(f.from) == a.phaseOf(call) {
			return true
		}
	}
	return false
}

// phaseOf is the phase that was running at t.
func (a *analysis) phaseOf(t time.Time) int {
	for _, p := range a.l.phases {
		if !t.Before(p.from) && !t.After(a.l.snaps[p.n].at) {
			return p.n
		}
	}
	return -1
}

// resolveUnacked finds, for every order in MySQL or in a dead letter, the
// requests without a clear answer that may have made it: the same user,
// SKU, qty and request id (sameRequest), sent before the order was made
// and (if answered at all) answered after. An order no 202 named needs
// one: an order no request explains is a violation. (An order a 202 named
// may still have been made by an earlier attempt of its request id that
// got no answer.)
func (a *analysis) resolveUnacked() {
	byUser := map[string][]*op{}
	for _, o := range a.ops {
		if o.kind == opBuy && !o.definite() && !o.unsent {
			byUser[o.user] = append(byUser[o.user], o)
		}
	}
	for _, id := range sortedKeys(a.known) {
		row := a.known[id]
		_, acked := a.acked[id]
		if acked && row.rid == "" {
			continue
		}
		for _, o := range byUser[row.user] {
			if o.sku != row.sku || o.qty != row.qty || !sameRequest(o, id, row.rid) {
				continue
			}
			if acked && o.rid == "" && o.outRID != row.rid {
				// A 202 named it: its request, or an earlier attempt that
				// was told the request id the 202's request retried with.
				continue
			}
			if o.call.After(row.created.Add(tick)) || (o.answered() && row.created.After(o.ret.Add(tick))) {
				continue
			}
			a.creator[id] = append(a.creator[id], o)
			a.makes[o] = append(a.makes[o], id)
		}
		if acked {
			continue
		}
		a.unacked++
		busy := len(a.creator[id]) > 0
		for _, o := range a.creator[id] {
			busy = busy && o.code == "busy"
		}
		if busy {
			a.l.viol.addSKU(row.sku, "busy_took", "order %s (%s; user %s sku %d qty %d rid %q) was made by a request answered 503 busy, which must write nothing: %s",
				id, row.status, row.user, row.sku, row.qty, row.rid, a.creator[id][0])
		}
		if len(a.creator[id]) == 0 {
			a.l.viol.addSKU(row.sku, "phantom", "order %s (user %s sku %d qty %d rid %q status %s created %s) matches no request that could have made it",
				id, row.user, row.sku, row.qty, row.rid, row.status, clock(row.created))
			continue
		}
		if row.status == "failed" {
			if a.goneBy(id, time.Now()) {
				a.gone = append(a.gone, id+" (unanswered; recorded failed)")
			} else if f, ok := a.exposed(id, row.created); ok {
				a.refusedLoss = append(a.refusedLoss, fmt.Sprintf("%s (unanswered; %s)", id, f))
			} else if a.collateral(row, row.created) {
				a.refusedAfter = append(a.refusedAfter, id+" (unanswered)")
			} else if a.afterLive(row.created) {
				a.refusedLive = append(a.refusedLive, id+" (unanswered)")
			} else {
				a.l.viol.addSKU(row.sku, "refused", "order %s (unanswered request) refused by the stock guard, and no data loss explains it", id)
			}
		}
	}
}

// resolveRetried fills retried: for each buy without a clear answer whose
// 503 named a request id, the orders later 202s to that id, by the same
// shopper for the same SKU, named.
func (a *analysis) resolveRetried() {
	type key struct {
		user, rid string
		sku       uint64
	}
	named := map[key][]*op{}
	for _, o := range a.ops {
		if o.kind == opBuy && o.rid != "" && o.status == http.StatusAccepted {
			k := key{o.user, o.rid, o.sku}
			named[k] = append(named[k], o)
		}
	}
	for _, o := range a.ops {
		if o.kind != opBuy || o.definite() || o.outRID == "" {
			continue
		}
		for _, r := range named[key{o.user, o.outRID, o.sku}] {
			if r.call.After(o.call) && !slices.Contains(a.retried[o], r.outOrder) {
				a.retried[o] = append(a.retried[o], r.outOrder)
			}
		}
	}
}

// sameRequest reports whether order id, carrying request id rid, may have
// been made by the buy o: the buy's request id, or for a buy sent without
// one, none — and when its 503 named one, only the order that id names
// ("srv-" and the order id), or one a retry with that id made.
func sameRequest(o *op, id, rid string) bool {
	switch {
	case o.rid != "":
		return rid == o.rid
	case o.outRID != "":
		return rid == o.outRID || (rid == "" && o.outRID == "srv-"+id)
	default:
		return rid == "" || !(strings.HasPrefix(rid, o.user+"-r") || strings.HasPrefix(rid, o.user+"-bad"))
	}
}

// checkLimits: no shopper holds more than the per-user limit in MySQL.
func (a *analysis) checkLimits() {
	type key struct {
		sku  uint64
		user string
	}
	held := map[key]int{}
	orders := map[key][]string{}
	for id, o := range a.final.orders {
		if o.active() {
			k := key{o.sku, o.user}
			held[k] += o.qty
			orders[k] = append(orders[k], id)
		}
	}
	for k, n := range held {
		sku := a.l.sku(k.sku)
		if sku == nil || n <= sku.limit {
			continue
		}
		excused := false
		for _, id := range orders[k] {
			if _, ok := a.exposed(id, a.callOf(id)); ok {
				excused = true
			}
		}
		msg := fmt.Sprintf("user %s holds %d units of sku %d (limit %d): %v", k.user, n, k.sku, sku.limit, orders[k])
		if excused {
			a.limitLoss = append(a.limitLoss, msg)
		} else {
			a.l.viol.addSKU(k.sku, "limit", "%s, and no data loss explains it", msg)
		}
	}
}

// checkRequestIDs: a request id answered 202 is answered the same order
// ever after — never another order, never a refusal — and maps to one
// order in MySQL; unless a data loss forgot the order between the first
// answer and the replay, or an operator deleted it with its dead letter
// before the replay.
func (a *analysis) checkRequestIDs() {
	type key struct{ user, rid string }
	groups := map[key][]*op{}
	for _, o := range a.ops {
		if o.kind == opBuy && o.rid != "" && o.badToken == "" {
			k := key{o.user, o.rid}
			groups[k] = append(groups[k], o)
		}
	}
	forgotten := func(first *op, later time.Time) (fault, bool) {
		for _, f := range a.losses {
			if f.to.Before(first.call) || f.from.After(later) {
				continue
			}
			if !f.committed[first.outOrder] {
				return f, true
			}
		}
		return fault{}, false
	}
	for k, g := range groups {
		var first *op
		for _, o := range g {
			if o.status == http.StatusAccepted && (first == nil || o.ret.Before(first.ret)) {
				first = o
			}
		}
		if first != nil {
			// The order a srv- id names was made by a buy sent without one.
			if row := a.final.orders[first.outOrder]; row != nil && row.rid != k.rid && (row.rid != "" || k.rid != "srv-"+first.outOrder) {
				a.l.viol.addSKU(first.sku, "request_id", "%s: the order carries request id %q in MySQL", first, row.rid)
			}
			for _, o := range g {
				if !o.call.After(first.ret) || !o.definite() {
					continue
				}
				same := o.status == http.StatusAccepted && o.outOrder == first.outOrder
				if same {
					continue
				}
				if f, ok := forgotten(first, o.call); ok {
					a.ridLoss = append(a.ridLoss, fmt.Sprintf("%s after %s (%s)", o, first.outOrder, f))
					continue
				}
				if a.goneBy(first.outOrder, o.call) {
					a.ridGone = append(a.ridGone, fmt.Sprintf("%s after %s", o, first.outOrder))
					continue
				}
				if a.whileLive(first.call) {
					// The old primary answered it: its request-id key
					// (and maybe its order) went with the replacement.
					a.ridLive = append(a.ridLive, fmt.Sprintf("%s after %s", o, first.outOrder))
					continue
				}
				kind := "request_id"
				if a.lossBetween(first.ret, o.call) {
					// The order was in MySQL before the loss: MySQL still
					// knows the request id.
					kind = "request_id_after_loss"
				}
				a.l.viol.addSKU(o.sku, kind, "%s: request id %s was answered order %s before (%s)", o, k.rid, first.outOrder, first)
			}
		}
		var rows []*orderRow
		for _, row := range a.known {
			if row.user == k.user && row.rid == k.rid {
				rows = append(rows, row)
			}
		}
		if len(rows) > 1 {
			sort.Slice(rows, func(i, j int) bool { return rows[i].created.Before(rows[j].created) })
			ok, live := true, false
			for i := 1; i < len(rows); i++ {
				prev := &op{call: rows[i-1].created, outOrder: rows[i-1].id}
				if _, lost := forgotten(prev, rows[i].created); lost || a.goneBy(prev.outOrder, rows[i].created) {
					continue
				}
				// As for the answers above: the order before was accepted
				// by a live primary being replaced, whose request-id key
				// went with it.
				if first, acked := a.acked[prev.outOrder]; acked && a.whileLive(first.call) {
					live = true
					continue
				}
				ok = false
			}
			var ids []string
			for _, r := range rows {
				ids = append(ids, fmt.Sprintf("%s(%s)", r.id, r.status))
			}
			switch {
			case ok && live:
				a.ridLive = append(a.ridLive, fmt.Sprintf("user %s rid %s has %d orders after the replacement of a live primary: %v", k.user, k.rid, len(rows), ids))
			case ok:
				a.ridLoss = append(a.ridLoss, fmt.Sprintf("user %s rid %s has %d orders after a data loss or a delete: %v", k.user, k.rid, len(rows), ids))
			case a.lossBetween(rows[0].created, rows[len(rows)-1].created):
				a.l.viol.addSKU(rows[0].sku, "request_id_after_loss", "user %s request id %s is %d orders in MySQL, the first written before a data loss: %v", k.user, k.rid, len(rows), ids)
			default:
				a.l.viol.addSKU(rows[0].sku, "request_id", "user %s request id %s is %d orders: %v", k.user, k.rid, len(rows), ids)
			}
		}
	}
}

// checkOrderOutcomes: what pay and cancel answered is what MySQL ends with:
// a paid order stays paid, a cancelled one cancelled, never both.
func (a *analysis) checkOrderOutcomes() {
	type outcome struct{ paid, cancelled, cancelPaid, payClosed *op }
	per := map[string]*outcome{}
	get := func(id string) *outcome {
		if per[id] == nil {
			per[id] = &outcome{}
		}
		return per[id]
	}
	for _, o := range a.ops {
		switch {
		case o.kind == opPay && o.status == http.StatusOK:
			get(o.order).paid = o
			if o.outStatus != "paid" {
				a.l.viol.addSKU(o.sku, "pay", "%s: answered status %q", o, o.outStatus)
			}
		case o.kind == opCancel && o.status == http.StatusOK:
			get(o.order).cancelled = o
			if o.outStatus != "cancelled" {
				a.l.viol.addSKU(o.sku, "cancel", "%s: answered status %q", o, o.outStatus)
			}
		case o.kind == opCancel && o.code == "order_paid":
			get(o.order).cancelPaid = o
		case o.kind == opPay && o.code == "order_closed":
			get(o.order).payClosed = o
		}
	}
	for _, id := range sortedKeys(per) {
		x := per[id]
		row := a.final.orders[id]
		status := "missing"
		if row != nil {
			status = row.status
		}
		switch {
		case x.paid != nil && x.cancelled != nil:
			a.l.viol.addSKU(x.paid.sku, "order_state", "order %s both paid (%s) and cancelled (%s); MySQL: %s", id, x.paid, x.cancelled, status)
		case x.paid != nil && status != "paid":
			a.l.viol.addSKU(x.paid.sku, "order_state", "%s, but MySQL ends with %s", x.paid, status)
		case x.cancelPaid != nil && status != "paid":
			a.l.viol.addSKU(x.cancelPaid.sku, "order_state", "%s, but MySQL ends with %s", x.cancelPaid, status)
		case x.cancelled != nil && status != "cancelled":
			a.l.viol.addSKU(x.cancelled.sku, "order_state", "%s, but MySQL ends with %s", x.cancelled, status)
		case x.payClosed != nil && status != "cancelled" && status != "expired" && status != "failed":
			a.l.viol.addSKU(x.payClosed.sku, "order_state", "%s, but MySQL ends with %s", x.payClosed, status)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
