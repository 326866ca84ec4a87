package chaostest

import (
	"cmp"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

const (
	// soldOutRecheck is how stale a sold_out answer may be by
	// docs/design/guarantees.md#what-is-guaranteed
	// ("at most 1 s"): a process answers from its flag for 1s after its
	// last buy saw the SKU sold out, unless told earlier that units came
	// back.
	soldOutRecheck = time.Second
	// soldOutSlack covers the time between the buy script seeing no units
	// and the process setting its flag: the reply on its way back and the
	// scheduler. The time a process was stopped is added on top.
	soldOutSlack = 250 * time.Millisecond
	// linTimeout bounds the linearizability check of one segment, splits
	// included. A segment that passes is decided in seconds; on a loaded
	// machine, or against a slow SQL backend (TiDB), a busy bucketed SKU's
	// segment with many answers of unknown outcome took 90 s of 2 min
	// and was still undecided.
	linTimeout = 5 * time.Minute
)

// linResult is the linearizability check of one SKU in one phase.
type linResult struct {
	sku       uint64
	buckets   int
	phase     int
	ops       int // operations checked
	unchecked int // operations after a data loss or a failover, not checked
	// excused are sold_out answers of a SKU split into buckets left out:
	// given while a stock cut went from bucket to bucket (see
	// checkSegment).
	excused int
	cut     bool
	result  porcupine.CheckResult
	took    time.Duration
	kinds   map[string]int // operations by kind and output
	rounds  int            // porcupine runs (checkStaged)
	splits  int            // histories split at a quiescent point to decide them
	file    string         // the visualization of an illegal or undecided history
}

// checkLinearizable checks, for every SKU and every phase, the history of
// buys, cancels, expiries, stock reads, stock changes, reconciles and
// deletes of dead letters against the model (model_test.go). A phase starts
// at rest from what MySQL held at the barrier before it. A data loss or a
// failover cuts its phase: the operations before it are checked, those
// that were still running when it began count as "maybe", and the rest of
// the phase is not checked (Redis then starts from a rebuild whose outcome
// depends on what it lost, or without the returns the old primary had not
// replicated). A history porcupine does not decide is a violation too.
func (a *analysis) checkLinearizable() []linResult {
	var out []linResult
	for n := 1; n < len(a.l.snaps); n++ {
		for _, sku := range a.l.skus {
			r := a.checkSegment(n, sku)
			out = append(out, r)
			switch r.result {
			case porcupine.Illegal:
				a.l.viol.addSKU(sku.id, "linearizability", "sku %d (%d buckets) phase %d: %d operations are not linearizable against the stock model; see %s", sku.id, sku.buckets, n, r.ops, r.file)
			case porcupine.Unknown:
				a.l.viol.addSKU(sku.id, "undecided", "sku %d (%d buckets) phase %d: %d operations: porcupine did not decide in %s, nor once split at quiescent points (%d splits); see %s", sku.id, sku.buckets, n, r.ops, linTimeout, r.splits, r.file)
			}
		}
	}
	return out
}

// builder numbers the orders of one segment.
type builder struct {
	ids        []string
	index      map[string]int
	qty        []int64
	user       []int
	users      map[string]int
	userOrders [][]int
	rid        []string // user + "/" + request id; without one, user + "/srv-" + the order id
}

func (b *builder) userIdx(name string) int {
	if i, ok := b.users[name]; ok {
		return i
	}
	b.users[name] = len(b.userOrders)
	b.userOrders = append(b.userOrders, nil)
	return b.users[name]
}

// order returns the index of order id, adding it.
func (b *builder) order(id, user string, qty int, rid string) int {
	if i, ok := b.index[id]; ok {
		return i
	}
	i := len(b.ids)
	b.index[id] = i
	b.ids = append(b.ids, id)
	b.qty = append(b.qty, int64(qty))
	u := b.userIdx(user)
	b.user = append(b.user, u)
	b.userOrders[u] = append(b.userOrders[u], i)
	// An order made without a request id is the one the id a 503 named
	// for its buy names: "srv-" and its order id.
	key := user + "/srv-" + id
	if rid != "" {
		key = user + "/" + rid
	}
	b.rid = append(b.rid, key)
	return i
}

func (b *builder) ridSet(user, rid string) []int {
	if rid == "" {
		return nil
	}
	key := user + "/" + rid
	out := []int{}
	for i, r := range b.rid {
		if r == key {
			out = append(out, i)
		}
	}
	return out
}

// lostSince reports whether Redis lost its data between from and to.
func (a *analysis) lostSince(from, to time.Time) bool {
	for _, f := range a.losses {
		if f.from.After(from) && f.from.Before(to) {
			return true
		}
	}
	return false
}

func ns(t time.Time) int64 { return t.Sub(runStart).Nanoseconds() }

func (a *analysis) checkSegment(n int, sku *skuInfo) linResult {
	start, end := a.l.snaps[n-1], a.l.snaps[n]
	from, cut := start.end, end.at
	var loss *fault // the data loss or failover that cuts the segment
	for i, f := range a.faults {
		if (f.dataLoss || f.failover) && f.from.After(from) && f.from.Before(cut) && (loss == nil || f.from.Before(loss.from)) {
			loss = &a.faults[i]
		}
	}
	if loss != nil {
		cut = loss.from
	}
	res := linResult{sku: sku.id, buckets: sku.buckets, phase: n, cut: loss != nil}
	b := &builder{index: map[string]int{}, users: map[string]int{}}
	init := mstate{total: start.skus[sku.id].total}
	var initActive int64
	initIDs := sortedKeys(start.orders)
	for _, id := range initIDs {
		row := start.orders[id]
		if row.sku != sku.id {
			continue
		}
		b.order(id, row.user, row.qty, row.rid)
		if row.active() {
			initActive += int64(row.qty)
		}
	}
	init.left = init.total - initActive

	// The segment's requests, and the orders they name or may have made.
	var segOps []*op
	for _, o := range a.ops {
		if o.phase != n || o.sku != sku.id || o.badToken != "" || o.unsent {
			continue
		}
		switch o.kind {
		case opBuy, opCancel, opPeek, opSetStock, opUpsert, opReconcile, opDeadDel:
		default:
			continue
		}
		if !o.call.Before(cut) {
			res.unchecked++
			continue
		}
		segOps = append(segOps, o)
	}
	late := func(o *op) bool { return o.ret.After(cut) }
	phantom := map[*op]int{}
	for _, o := range segOps {
		if o.kind != opBuy {
			continue
		}
		if o.status == http.StatusAccepted {
			b.order(o.outOrder, o.user, o.qty, o.rid)
		}
		if !o.definite() || late(o) {
			for _, id := range a.makes[o] {
				row := a.known[id]
				b.order(id, row.user, row.qty, row.rid)
			}
			// 503 busy writes nothing (the lock was not obtained, or the
			// SKU was being rebuilt); an order it made anyway is a
			// violation of its own (resolveUnacked).
			if loss != nil && o.code != "busy" {
				phantom[o] = b.order(fmt.Sprintf("lost?#%d", o.id), o.user, o.qty, o.rid)
			}
		}
	}
	// Every order of the segment's request ids (one may have been made by
	// a retry in another phase).
	rids := map[string]bool{}
	for _, o := range segOps {
		if o.rid != "" {
			rids[o.user+"/"+o.rid] = true
		}
	}
	for _, id := range sortedKeys(a.known) {
		row := a.known[id]
		if row.sku == sku.id && row.rid != "" && rids[row.user+"/"+row.rid] && row.created.Before(cut) {
			b.order(id, row.user, row.qty, row.rid)
		}
	}
	// The orders of the dead letters deleted in the segment that never
	// reached MySQL live (the delete records them failed): their units
	// come back.
	deleted := map[*op][]int{}
	for _, o := range segOps {
		if o.kind != opDeadDel {
			continue
		}
		d := a.l.deadLetterOf(o.task)
		if d == nil {
			continue
		}
		for _, t := range d.orders {
			if row := a.final.orders[t.OrderID]; row == nil || droppedBy(row, o.call) {
				deleted[o] = append(deleted[o], b.order(t.OrderID, t.User, t.Qty, t.RequestID))
			}
		}
	}
	// Sold-out answers of a SKU split into buckets that docs/design/buckets.md
	// allows although the model has units left: while a stock cut went
	// from bucket to bucket (not atomic: a cut takes units bucket after
	// bucket, and a refused one holds them until it gives them back). Units
	// moving between buckets count as left: a seller lands a move held up
	// (its process stopped or dead) before it says sold_out.
	var excuse []span
	if sku.buckets > 1 {
		for _, o := range segOps {
			if (o.kind == opSetStock || o.kind == opUpsert) && o.cut {
				to := o.ret
				if !o.answered() {
					to = cut
				}
				excuse = append(excuse, span{o.call, to})
			}
		}
	}
	// Payment deadlines: orders that expired in this phase give their units
	// back at some moment after MySQL closed them, at the latest when the
	// returned set showed them.
	type expiry struct {
		row *orderRow
		out moutput
	}
	var expiries []expiry
	for _, id := range sortedKeys(a.final.orders) {
		row := a.final.orders[id]
		if row.sku != sku.id || row.status != "expired" {
			continue
		}
		if prev := start.orders[id]; prev != nil && !prev.active() {
			continue
		}
		out := moutput{kind: outOK}
		if loss == nil {
			if e := end.orders[id]; e == nil || e.status != "expired" {
				continue
			}
		} else {
			if !row.closed.Add(-tick).Before(cut) {
				continue
			}
			out.kind = outMaybe
		}
		b.order(id, row.user, row.qty, row.rid)
		expiries = append(expiries, expiry{row, out})
	}

	var hist []porcupine.Operation
	add := func(client int, in minput, out moutput, call, ret time.Time) {
		if ret.Before(call) {
			ret = call
		}
		hist = append(hist, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: ns(call), Return: ns(ret)})
	}
	adminClient := func() int { return len(b.userOrders) + 1 }
	nextDefinite := func(o *op) time.Time {
		t := cut
		for _, x := range a.ops {
			if x.kind == o.kind && x.sku == o.sku && x.order == o.order && x.call.After(o.call) && x.definite() && x.ret.Before(t) {
				t = x.ret
			}
		}
		return t
	}
	maybes := map[string]bool{}
	for _, o := range segOps {
		desc := o.String()
		switch o.kind {
		case opBuy:
			u := b.userIdx(o.user)
			in := minput{kind: mBuy, user: u, qty: int64(o.qty), rid: b.ridSet(o.user, o.rid), desc: desc}
			switch {
			case o.status == http.StatusAccepted && !late(o):
				in.order = b.index[o.outOrder]
				add(u, in, moutput{kind: outOK}, o.call, o.ret)
			case o.code == "sold_out" && !late(o):
				call := a.soldOutCall(o, from)
				if overlaps(excuse, call, o.ret) {
					res.excused++
					continue
				}
				add(u, in, moutput{kind: outSoldOut}, call, o.ret)
			case o.code == "limit_exceeded" && !late(o):
				add(u, in, moutput{kind: outLimit}, o.call, o.ret)
			case o.definite() && !late(o):
				// Answers the model does not cover are checked elsewhere.
			case o.code == "busy" && !late(o) && len(a.makes[o]) == 0:
			default:
				ret := cut
				if l := a.latest(o); l.Before(ret) {
					ret = l
				}
				var alts []int
				persisted := time.Time{}
				for _, id := range a.makes[o] {
					row := a.known[id]
					if row.sku != sku.id {
						continue
					}
					alts = append(alts, b.index[id])
					if row.persisted.After(persisted) {
						persisted = row.persisted
					}
				}
				if o.status == http.StatusAccepted {
					alts = append(alts, b.index[o.outOrder])
				}
				for _, id := range a.retried[o] {
					if i := b.order(id, o.user, o.qty, o.outRID); !slices.Contains(alts, i) {
						alts = append(alts, i)
					}
				}
				p, lost := phantom[o]
				if lost {
					alts = append(alts, p)
				} else if !persisted.IsZero() && persisted.Add(tick).Before(ret) {
					ret = persisted.Add(tick)
				}
				if len(alts) == 0 {
					continue // it made nothing
				}
				if _, acked := a.acked[b.ids[alts[0]]]; len(alts) == 1 && !acked && loss == nil && len(a.creator[b.ids[alts[0]]]) == 1 {
					in.order = alts[0]
					add(u, in, moutput{kind: outOK}, o.call, ret)
					continue
				}
				in.alts = alts
				add(u, in, moutput{kind: outMaybe}, o.call, ret)
			}
		case opCancel:
			x, ok := b.index[o.order]
			if !ok {
				row := a.known[o.order]
				if row == nil {
					continue // an order Redis lost before this segment
				}
				x = b.order(o.order, row.user, row.qty, row.rid)
			}
			u := b.userIdx(o.user)
			in := minput{kind: mCancel, user: u, order: x, desc: desc}
			switch {
			case o.status == http.StatusOK && !late(o):
				add(u, in, moutput{kind: outOK}, o.call, o.ret)
			case o.definite() && !late(o):
			default:
				row := a.known[o.order]
				if row == nil || row.status != "cancelled" {
					continue // it cancelled nothing
				}
				// The units come back once, before the order shows in
				// the returned set: not at all, or before this request,
				// leaves it nothing to do.
				seen, ok := a.l.ret.first(o.order)
				if (!ok && loss == nil) || (ok && seen.Before(o.call)) {
					continue
				}
				ret := nextDefinite(o)
				if ok && seen.Before(ret) {
					// The units were back by then: the return happened in
					// this window, whoever made it.
					add(u, in, moutput{kind: outOK}, o.call, seen)
					continue
				}
				// Unanswered retries of one cancel may give the units
				// back once among them: one operation over all of them.
				key := fmt.Sprintf("cancel %s %d", o.order, ret.UnixNano())
				if maybes[key] {
					continue
				}
				maybes[key] = true
				add(u, in, moutput{kind: outMaybe}, o.call, ret)
			}
		case opPeek:
			if o.status == http.StatusOK && !late(o) {
				add(adminClient(), minput{kind: mPeek, desc: desc}, moutput{left: o.left}, o.call, o.ret)
			}
		case opSetStock, opUpsert:
			in := minput{kind: mSet, total: o.total, desc: desc}
			switch {
			case o.status == http.StatusOK && !late(o):
				add(adminClient(), in, moutput{kind: outOK, left: o.left}, o.call, o.ret)
			case o.code == "below_sold" && !late(o):
				add(adminClient(), in, moutput{kind: outBelow}, o.call, o.ret)
			case o.definite() && !late(o):
			default:
				ret := cut
				for _, x := range a.ops {
					if (x.kind == opSetStock || x.kind == opUpsert) && x.sku == o.sku && x.call.After(o.call) && x.definite() && x.ret.Before(ret) {
						ret = x.ret
					}
				}
				// Setting the same total again changes nothing: unanswered
				// retries of one change are one operation.
				key := fmt.Sprintf("set %d %d", o.total, ret.UnixNano())
				if maybes[key] {
					continue
				}
				maybes[key] = true
				add(adminClient(), in, moutput{kind: outMaybe}, o.call, ret)
			}
		case opReconcile, opDeadDel:
			in := minput{kind: mRebuild, desc: desc}
			if o.kind == opDeadDel {
				in = minput{kind: mDelete, orders: deleted[o], desc: desc}
			}
			switch {
			case o.status == http.StatusOK && !late(o):
				add(adminClient(), in, moutput{kind: outOK}, o.call, o.ret)
			case o.status == http.StatusNotFound && !late(o):
				// Another operator took the dead letter first.
			case o.kind == opReconcile && o.code == "busy" && !late(o):
				// Another rebuild held the SKU: nothing was changed.
			default:
				ret := cut
				if l := a.latest(o); o.answered() && l.Before(ret) {
					ret = l
				}
				add(adminClient(), in, moutput{kind: outMaybe}, o.call, ret)
			}
		}
	}
	// Expiries in the order MySQL closed them, each chained to the one
	// before (see chained).
	slices.SortStableFunc(expiries, func(x, y expiry) int { return x.row.closed.Compare(y.row.closed) })
	prev := 0
	for _, e := range expiries {
		call := a.l.heldUntil(e.row.closed.Add(-tick))
		ret := cut
		if seen, ok := a.l.ret.first(e.row.id); ok && seen.Before(ret) && seen.After(call) {
			ret = seen
			e.out.kind = outOK // back before the loss, if any
		}
		in := minput{kind: mExpire, order: b.index[e.row.id],
			desc: fmt.Sprintf("expire %s user=%s qty=%d closed=%s", e.row.id, e.row.user, e.row.qty, clock(e.row.closed))}
		if e.out.kind == outOK {
			in.after, prev = prev, in.order+1
		}
		add(adminClient()+1, in, e.out, call, ret)
	}

	words := (len(b.ids) + 63) / 64
	init.bought, init.returned = make([]uint64, words), make([]uint64, words)
	for _, id := range initIDs {
		row := start.orders[id]
		if row.sku != sku.id {
			continue
		}
		init.bought = with(init.bought, b.index[id])
		if !row.active() {
			init.returned = with(init.returned, b.index[id])
		}
	}
	// An order deleted with its dead letter in an earlier phase is not in
	// MySQL, but its request id still answers it: bought, its units back.
	// Not after a data loss since the delete: Redis forgot the request id,
	// and no rebuild brings it back from MySQL.
	for id, at := range a.deleted {
		i, ok := b.index[id]
		if ok && at.Before(from) && a.known[id] != nil && a.known[id].sku == sku.id && !a.lostSince(at, from) {
			init.bought, init.returned = with(init.bought, i), with(init.returned, i)
		}
	}
	m := &mmodel{bucketed: sku.buckets > 1, limit: int64(sku.limit), qty: b.qty, userOrders: b.userOrders, init: init}
	res.ops = len(hist)
	res.kinds = map[string]int{}
	for _, h := range hist {
		in, out := h.Input.(minput), h.Output.(moutput)
		res.kinds[fmt.Sprintf("%s:%s", []string{"buy", "cancel", "expire", "read", "set", "rebuild", "delete"}[in.kind], out)]++
	}
	if len(hist) == 0 {
		res.result = porcupine.Ok
		return res
	}
	began := time.Now()
	tries := [][]porcupine.Operation{hist, unchained(hist)}
	if t := withoutTrailingMaybes(hist); len(t) < len(hist) {
		tries = append([][]porcupine.Operation{t}, tries...)
	}
	var d decision
	for i, h := range tries {
		d = decide(m, m.porcupine(), h, 0, began.Add(linTimeout*time.Duration(i+1)/time.Duration(len(tries))))
		if d.result == porcupine.Ok {
			break
		}
	}
	res.result, res.took, res.rounds, res.splits = d.result, time.Since(began), d.rounds, d.splits
	if res.result != porcupine.Ok {
		res.file = filepath.Join(os.TempDir(), fmt.Sprintf("seckill-chaos-%d-%s-sku%d-phase%d.html", runSeed, a.l.spec.name, sku.id, n))
		if err := porcupine.VisualizePath(d.model, d.info, res.file); err != nil {
			res.file = "(visualization failed: " + err.Error() + ")"
		}
		what := "not linearizable"
		if res.result == porcupine.Unknown {
			what = fmt.Sprintf("not decided in %s", linTimeout)
		}
		a.l.logf("sku %d phase %d %s from total=%d left=%d:\n%s", sku.id, n, what, init.total, init.left, explain(d.checked, d.info))
	}
	return res
}

// withoutTrailingMaybes is hist without the operations of unknown outcome
// that are still open when the last operation of hist is called: such an
// operation can always be placed last, after every other, and have done
// nothing (every maybe allows that), so hist is linearizable if the rest
// is. A segment cut by a data loss or a failover ends with a crowd of them
// (every request and expiry open at the cut), each doubling the states
// porcupine tries. The converse does not hold (one of them may have taken
// effect earlier, and the rest need it), so a history that fails without
// them is checked again whole.
func withoutTrailingMaybes(hist []porcupine.Operation) []porcupine.Operation {
	var lastCall int64
	for _, h := range hist {
		if h.Output.(moutput).kind != outMaybe {
			lastCall = max(lastCall, h.Call)
		}
	}
	// Dropping one may lower lastCall; the rule is applied once, with the
	// calls of every operation kept, which is enough and simple.
	var out []porcupine.Operation
	for _, h := range hist {
		if h.Output.(moutput).kind == outMaybe && h.Return >= lastCall {
			continue
		}
		out = append(out, h)
	}
	return out
}

// unchained is hist with its expiries free to be returned in any order.
//
// Expiries are first chained, each returned only after the one MySQL closed
// before it: their windows run from the close to the moment the returned
// set showed them, so dozens expired in one sweep overlap, and porcupine,
// which does not know that they commute, tries every subset of them in
// turn. In the order they were closed (as the closers mostly return them)
// it has one to try at a time. The chain only forbids orders the real model
// allows, so a history linearizable with it is linearizable; one that is
// not, or not decided in half the time, is checked again unchained.
func unchained(hist []porcupine.Operation) []porcupine.Operation {
	out := slices.Clone(hist)
	for i, h := range out {
		if in := h.Input.(minput); in.after > 0 {
			in.after = 0
			out[i].Input = in
		}
	}
	return out
}

// decision is what decide found about a history.
type decision struct {
	result  porcupine.CheckResult
	model   porcupine.Model // the model of the part decided last
	info    porcupine.LinearizationInfo
	checked []porcupine.Operation // the operations porcupine checked last
	end     any                   // Ok: the states after the linearization found
	rounds  int
	splits  int
}

// decide checks hist with checkStaged and, when porcupine cannot decide it
// in half the time left before deadline, splits it at the quiescent point
// (no operation open across it) nearest its middle, up to six times deep.
// Every linearization of the whole orders the first part before the
// second, so a first part that is not linearizable makes the whole not
// linearizable; a first part that is, followed by a second that is from
// the states its linearization ends in, makes the whole linearizable. A
// second part that is not, from those states only, leaves the whole
// undecided (another linearization of the first part might end
// elsewhere): never a pass.
func decide(m *mmodel, model porcupine.Model, hist []porcupine.Operation, depth int, deadline time.Time) decision {
	d := checkStaged(model, hist, m.bucketed, time.Now().Add(time.Until(deadline)/2))
	d.model = model
	if d.result != porcupine.Unknown || depth >= 6 {
		return d
	}
	first, second, ok := splitQuiet(hist)
	if !ok {
		return d
	}
	d1 := decide(m, model, first, depth+1, time.Now().Add(time.Until(deadline)/2))
	d1.splits++
	d1.rounds += d.rounds
	if d1.result != porcupine.Ok {
		return d1
	}
	d2 := decide(m, m.from(d1.end.([]any)), second, depth+1, deadline)
	d2.splits += d1.splits
	d2.rounds += d1.rounds
	if d2.result == porcupine.Illegal {
		d2.result = porcupine.Unknown
	}
	return d2
}

// splitQuiet splits hist, ordered by call, at the quiescent point nearest
// its middle: every operation of the first part returned before any of
// the second was called. ok is false when there is none.
func splitQuiet(hist []porcupine.Operation) (first, second []porcupine.Operation, ok bool) {
	h := slices.Clone(hist)
	slices.SortStableFunc(h, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	best := -1
	maxRet := int64(-1 << 62)
	for k := 1; k < len(h); k++ {
		maxRet = max(maxRet, h[k-1].Return)
		if maxRet < h[k].Call && (best < 0 || abs(k-len(h)/2) < abs(best-len(h)/2)) {
			best = k
		}
	}
	if best < 0 {
		return nil, nil, false
	}
	return h[:best], h[best:], true
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// overlaps reports whether [from, to] meets one of spans.
func overlaps(spans []span, from, to time.Time) bool {
	for _, s := range spans {
		if !s.from.After(to) && !s.to.Before(from) {
			return true
		}
	}
	return false
}

// checkStaged checks hist in stages, because porcupine's search does not
// know that an operation which changes nothing can always be placed as
// early as it is legal: hundreds of sold_out answers with windows of more
// than a second (soldOutCall) make it try their orders among themselves
// and time out, and so do the reads of a SKU split into buckets (bucketed),
// which bound the units left without fixing them, among expiries whose
// windows run for seconds. So it first checks every other operation; then
// each sold_out answer and split read is placed, if it can be, into the
// linearization found (a point where every state the model may be in has
// left < qty, or left >= the read, after every operation that must precede
// it and before every one that must follow it). The answers that cannot be
// placed are added to the history, which is checked again, and the rest
// placed again into the new linearization, until all are placed or
// porcupine says the history is not linearizable, or the deadline has
// passed (undecided).
// Illegal is porcupine's verdict on a part of the history, so the whole is
// not linearizable either. It returns the verdict, porcupine's account of
// the last history it checked, that history, how many rounds it took and,
// when linearizable, the states the linearization found ends in. A
// linearizable history without a linearization to show is undecided.
func checkStaged(model porcupine.Model, hist []porcupine.Operation, bucketed bool, deadline time.Time) decision {
	var core, waiting []porcupine.Operation
	for _, h := range hist {
		if staged(h, bucketed) {
			waiting = append(waiting, h)
		} else {
			core = append(core, h)
		}
	}
	for round := 1; ; round++ {
		res, info := porcupine.CheckOperationsVerbose(model, core, max(time.Until(deadline), time.Second))
		d := decision{result: res, info: info, checked: core, rounds: round}
		if res != porcupine.Ok {
			return d
		}
		lin := []int{}
		if len(core) > 0 {
			parts := info.PartialLinearizations()
			if len(parts) == 0 || len(parts[0]) == 0 || len(parts[0][0]) != len(core) {
				d.result = porcupine.Unknown
				return d
			}
			lin = parts[0][0]
		}
		d.end = endState(model, core, lin)
		if len(waiting) == 0 {
			return d
		}
		rest := unplaced(model, core, lin, waiting)
		if len(rest) == 0 {
			return d
		}
		// One at a time, the earliest first: porcupine then has one
		// long window more to place, and says at once whether another
		// linearization takes it. Many at once make it try their orders
		// among themselves.
		first := slices.MinFunc(rest, func(a, b porcupine.Operation) int { return cmp.Compare(a.Return, b.Return) })
		core = append(core, first)
		waiting = slices.DeleteFunc(waiting, func(h porcupine.Operation) bool {
			return h.Call == first.Call && h.Input.(minput).desc == first.Input.(minput).desc
		})
		if time.Now().After(deadline) {
			d.result = porcupine.Unknown
			return d
		}
	}
}

// staged reports whether checkStaged places h into a linearization of the
// others rather than asking porcupine to: a sold_out answer, or a read of a
// SKU split into buckets that answered.
func staged(h porcupine.Operation, bucketed bool) bool {
	out := h.Output.(moutput)
	return out.kind == outSoldOut || (bucketed && h.Input.(minput).kind == mPeek && out.kind == outOK)
}

// endState is the states the model is in after the operations of core in
// the order lin.
func endState(model porcupine.Model, core []porcupine.Operation, lin []int) any {
	state := model.Init()
	for _, i := range lin {
		_, state = model.Step(state, core[i].Input, core[i].Output)
	}
	return state
}

// unplaced returns the operations of waiting (staged) that fit nowhere in
// the linearization lin of core.
func unplaced(model porcupine.Model, core []porcupine.Operation, lin []int, waiting []porcupine.Operation) []porcupine.Operation {
	n := len(lin)
	// maxLeft[k], minLeft[k]: the most and the fewest units left in any
	// state the model may be in after the first k operations of lin.
	maxLeft, minLeft := make([]int64, n+1), make([]int64, n+1)
	state := model.Init()
	for k := 0; ; k++ {
		maxLeft[k], minLeft[k] = -1<<62, 1<<62
		for _, s := range state.([]any) {
			maxLeft[k] = max(maxLeft[k], s.(mstate).left)
			minLeft[k] = min(minLeft[k], s.(mstate).left)
		}
		if k == n {
			break
		}
		h := core[lin[k]]
		_, state = model.Step(state, h.Input, h.Output)
	}
	// An answer placed at k follows lin[:k] and precedes lin[k:]: none of
	// the first may have been called after it returned, none of the rest
	// may have returned before it was called.
	maxCall := make([]int64, n+1) // the latest call among lin[:k]
	minRet := make([]int64, n+1)  // the earliest return among lin[k:]
	maxCall[0] = -1 << 62
	for k := 1; k <= n; k++ {
		maxCall[k] = max(maxCall[k-1], core[lin[k-1]].Call)
	}
	minRet[n] = 1 << 62
	for k := n - 1; k >= 0; k-- {
		minRet[k] = min(minRet[k+1], core[lin[k]].Return)
	}
	var rest []porcupine.Operation
	for _, h := range waiting {
		in, out := h.Input.(minput), h.Output.(moutput)
		// fits: the answer holds in every state the model may be in, so
		// placing it there changes none of them.
		fits := func(k int) bool { return maxLeft[k] < in.qty }
		if out.kind == outOK {
			fits = func(k int) bool { return 0 <= out.left && out.left <= minLeft[k] }
		}
		placed := false
		for k := 0; k <= n && maxCall[k] <= h.Return; k++ {
			if minRet[k] >= h.Call && fits(k) {
				placed = true
				break
			}
		}
		if !placed {
			rest = append(rest, h)
		}
	}
	return rest
}

// heldUntil is t, or the end of the hold of the SKU rows (holdDrain) that
// began before t and was still on then: a close that began in it waits for
// the skus row to take its units off sold, and gives them back in Redis
// only after it committed.
func (l *lane) heldUntil(t time.Time) time.Time {
	l.holdMu.Lock()
	defer l.holdMu.Unlock()
	for _, h := range l.holds {
		if !t.Before(h.from) && t.Before(h.to) {
			t = h.to
		}
	}
	return t
}

// latest is the last moment a request without a clear answer can have
// taken effect in Redis. An answered one: its answer, or the end of a Redis
// freeze it met (a command sent to a frozen Redis runs when it goes on). One
// without an answer: 6s after it was sent or after its process's last stop
// (the buy path gives up on a request 5.1s after taking it), at the latest
// when its process was killed; later if Redis was frozen then.
func (a *analysis) latest(o *op) time.Time {
	t := o.ret
	if !o.answered() {
		p := a.l.procs[o.instance]
		last := o.call
		for _, s := range p.stopSpans() {
			if !s.from.After(last.Add(6*time.Second)) && s.to.After(last) {
				last = s.to
			}
		}
		t = last.Add(6 * time.Second)
		if k, ok := p.killAfter(o.call); ok && k.Before(t) {
			t = k
		}
	}
	for _, f := range a.faults {
		if f.kind == faultRedisFreeze && !f.from.After(t) && f.to.After(o.call) && f.to.After(t) {
			t = f.to
		}
	}
	return t.Add(100 * time.Millisecond)
}

// soldOutCall is the call time of a sold_out answer moved back by how
// stale the answering process's sold-out flag may be: soldOutRecheck and
// soldOutSlack, plus the time the process was stopped around then.
func (a *analysis) soldOutCall(o *op, from time.Time) time.Time {
	ext := soldOutRecheck + soldOutSlack
	for _, s := range a.l.procs[o.instance].stopSpans() {
		if s.to.After(o.call.Add(-ext)) && s.from.Before(o.ret) {
			ext += s.to.Sub(s.from)
		}
	}
	call := o.call.Add(-ext)
	if call.Before(from) {
		call = from
	}
	return call
}

// explain describes where the longest linearization found stops: its last
// operations and the earliest ones it could not place.
func explain(hist []porcupine.Operation, info porcupine.LinearizationInfo) string {
	parts := info.PartialLinearizations()
	if len(parts) == 0 || len(parts[0]) == 0 {
		return "  (no partial linearization)"
	}
	var longest []int
	for _, l := range parts[0] {
		if len(l) > len(longest) {
			longest = l
		}
	}
	done := map[int]bool{}
	for _, i := range longest {
		done[i] = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  longest linearization: %d of %d operations; its last ones:\n", len(longest), len(hist))
	for _, i := range longest[max(0, len(longest)-6):] {
		fmt.Fprintf(&b, "    %s\n", describe(hist[i]))
	}
	var rest []int
	for i := range hist {
		if !done[i] {
			rest = append(rest, i)
		}
	}
	sort.Slice(rest, func(x, y int) bool { return hist[rest[x]].Call < hist[rest[y]].Call })
	fmt.Fprintf(&b, "  earliest operations it could not place:\n")
	for _, i := range rest[:min(8, len(rest))] {
		fmt.Fprintf(&b, "    %s\n", describe(hist[i]))
	}
	return b.String()
}

func describe(o porcupine.Operation) string {
	in, out := o.Input.(minput), o.Output.(moutput)
	s := fmt.Sprintf("[%.3fs..%.3fs] %s => %s", float64(o.Call)/1e9, float64(o.Return)/1e9, in.desc, out)
	if in.kind == mPeek || (in.kind == mSet && out.kind == outOK) {
		s += fmt.Sprintf(" left=%d", out.left)
	}
	return s
}
