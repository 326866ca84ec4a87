package chaostest

import (
	"fmt"
	"hash/fnv"
	"math/bits"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
)

// The linearizability model of one SKU: a counter of units left, the SKU's
// stock_total, and which orders hold units. Orders are numbered within a
// segment of the history; an order is bought (its units taken) and later
// maybe returned (cancelled, expired, or refused). The per-user limit is
// checked against the units a user's bought and not returned orders hold.
//
// Operations and what the model allows (all of them atomic at one point
// between call and return):
//
//   - buy ok(order): a request id already bought answers its order
//     unchanged; otherwise the order must be new, qty <= limit, qty <= left
//     and the user's units + qty <= limit; left -= qty.
//   - buy sold_out: left < qty. The per-process sold-out flag answers
//     without Redis for up to stock's SoldOutRecheck (1s) after a buy saw
//     the SKU sold out, so this operation's call is moved back by that
//     much plus a slack (see soldOutCall).
//   - buy limit_exceeded: qty > limit, or (request id not bought and the
//     user's units + qty > limit), whatever is left: a shopper who could
//     not take the units anyway is told so rather than sold_out.
//   - buy maybe(orders): no clear answer: nothing, or the buy of one of the
//     orders that MySQL shows it may have made, under the rules of ok.
//   - cancel/expire ok(order): the order must be bought; its units come
//     back unless they already have (a second cancel is a no-op; an expiry
//     must be the first return).
//   - cancel/expire maybe(order): nothing, or the return.
//   - read left: left equals the answer (GET /api/v1/skus/{id}). For a SKU
//     split into buckets the answer is at most left: the buckets are read
//     on their shards one after the other, and a buy in one bucket between
//     two reads may be counted although the left of another is from
//     before it (stock.Store.Left). Units moving between two buckets are
//     counted, as by the counter (a sold_out answer must find none of them
//     either).
//   - set total ok(left): left' = left + total' - total >= 0 and equals the
//     answer's stock_left (is at least it, split into buckets). below_sold:
//     left + total' - total < 0 (split into buckets, a cut goes bucket after
//     bucket and cannot take units on their way between two, so it may be
//     refused with units left). maybe: nothing, or the change.
//   - rebuild ok: left' = total - the units of the orders bought and not
//     returned (a reconcile rebuilds Redis from MySQL and the queue, which
//     hold exactly those orders; units of moves that never landed come
//     back). maybe: nothing, or the rebuild.
//   - delete ok(orders): an operator deleted a dead letter: the units of its
//     orders that never reached MySQL come back, each once; those orders
//     must have been bought. maybe: nothing, or any of them back.

type mkind uint8

const (
	mBuy mkind = iota
	mCancel
	mExpire
	mPeek
	mSet
	mRebuild
	mDelete
)

type moutKind uint8

const (
	outOK moutKind = iota
	outSoldOut
	outLimit
	outMaybe
	outBelow
)

// minput is an operation of the model.
type minput struct {
	kind  mkind
	user  int   // index in the segment's users
	qty   int64 // units of a buy
	order int   // the order a buy ok made, or a cancel or expiry names
	alts  []int // the orders a buy maybe may have made
	// orders are the orders of a deleted dead letter that are not in MySQL
	orders []int
	rid    []int // orders carrying the buy's request id (nil without one)
	total  int64 // the stock_total a stock change asks for
	// after, for an expiry, is 1 + the order whose expiry must be returned
	// before it (0: none): a check that first tries expiries in the order
	// MySQL closed them (see checkSegment).
	after int
	desc  string
}

type moutput struct {
	kind moutKind
	left int64
}

// mstate is the model's state; it is never modified, steps copy it.
type mstate struct {
	total, left int64
	bought      []uint64
	returned    []uint64
}

func has(b []uint64, i int) bool { return b[i/64]&(1<<(uint(i)%64)) != 0 }

func with(b []uint64, i int) []uint64 {
	c := slices.Clone(b)
	c[i/64] |= 1 << (uint(i) % 64)
	return c
}

// mmodel is the model of one segment of one SKU.
type mmodel struct {
	bucketed   bool // the SKU is split into stock buckets
	limit      int64
	qty        []int64 // per order
	userOrders [][]int // per user: its orders
	init       mstate
}

func (m *mmodel) held(s mstate, user int) int64 {
	n := int64(0)
	for _, o := range m.userOrders[user] {
		if has(s.bought, o) && !has(s.returned, o) {
			n += m.qty[o]
		}
	}
	return n
}

func (m *mmodel) anyBought(s mstate, orders []int) bool {
	for _, o := range orders {
		if has(s.bought, o) {
			return true
		}
	}
	return false
}

func (m *mmodel) canTake(s mstate, in minput, order int) bool {
	return !has(s.bought, order) && in.qty <= m.limit && in.qty <= s.left && m.held(s, in.user)+in.qty <= m.limit
}

func (m *mmodel) take(s mstate, order int) mstate {
	return mstate{total: s.total, left: s.left - m.qty[order], bought: with(s.bought, order), returned: s.returned}
}

func (m *mmodel) give(s mstate, order int) mstate {
	return mstate{total: s.total, left: s.left + m.qty[order], bought: s.bought, returned: with(s.returned, order)}
}

// step returns every state the operation can lead to from s with its
// output; none when the output is impossible.
func (m *mmodel) step(st, inv, outv any) []any {
	s, in, out := st.(mstate), inv.(minput), outv.(moutput)
	switch in.kind {
	case mBuy:
		replay := in.rid != nil && m.anyBought(s, in.rid)
		switch out.kind {
		case outOK:
			if replay {
				if has(s.bought, in.order) && slices.Contains(in.rid, in.order) {
					return []any{s}
				}
				return nil
			}
			if m.canTake(s, in, in.order) {
				return []any{m.take(s, in.order)}
			}
		case outMaybe:
			res := []any{s}
			if !replay {
				for _, o := range in.alts {
					if m.canTake(s, in, o) {
						res = append(res, m.take(s, o))
					}
				}
			}
			return res
		case outSoldOut:
			if s.left < in.qty {
				return []any{s}
			}
		case outLimit:
			if in.qty > m.limit || (!replay && m.held(s, in.user)+in.qty > m.limit) {
				return []any{s}
			}
		}
	case mCancel, mExpire:
		x := in.order
		live := has(s.bought, x) && !has(s.returned, x)
		if in.after > 0 && !has(s.returned, in.after-1) {
			return nil
		}
		switch out.kind {
		case outOK:
			switch {
			case live:
				return []any{m.give(s, x)}
			case in.kind == mCancel && has(s.bought, x):
				return []any{s}
			}
		case outMaybe:
			if live {
				return []any{s, m.give(s, x)}
			}
			return []any{s}
		}
	case mPeek:
		if s.left == out.left || (m.bucketed && 0 <= out.left && out.left <= s.left) {
			return []any{s}
		}
	case mSet:
		left := s.left + in.total - s.total
		set := mstate{total: in.total, left: left, bought: s.bought, returned: s.returned}
		switch out.kind {
		case outOK:
			if left >= 0 && (left == out.left || (m.bucketed && 0 <= out.left && out.left <= left)) {
				return []any{set}
			}
		case outBelow:
			if left < 0 || (m.bucketed && in.total < s.total) {
				return []any{s}
			}
		case outMaybe:
			if left >= 0 {
				return []any{s, set}
			}
			return []any{s}
		}
	case mRebuild:
		var held int64
		for i := range m.qty {
			if has(s.bought, i) && !has(s.returned, i) {
				held += m.qty[i]
			}
		}
		re := mstate{total: s.total, left: max(0, s.total-held), bought: s.bought, returned: s.returned}
		switch out.kind {
		case outOK:
			return []any{re}
		case outMaybe:
			return []any{s, re}
		}
	case mDelete:
		res := []any{s}
		for _, x := range in.orders {
			if !has(s.bought, x) {
				if out.kind == outOK {
					return nil // a dead letter holds orders that were bought
				}
				continue
			}
			if has(s.returned, x) {
				continue
			}
			if out.kind == outOK {
				res[0] = m.give(res[0].(mstate), x)
				continue
			}
			for _, st := range res[:len(res):len(res)] {
				res = append(res, m.give(st.(mstate), x))
			}
		}
		return res
	}
	return nil
}

func (m *mmodel) porcupine() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{m.init} },
		Step: m.step,
		Equal: func(a, b any) bool {
			x, y := a.(mstate), b.(mstate)
			return x.total == y.total && x.left == y.left && slices.Equal(x.bought, y.bought) && slices.Equal(x.returned, y.returned)
		},
		Hash: func(a any) uint64 {
			x := a.(mstate)
			h := fnv.New64a()
			var b [8]byte
			put := func(v uint64) {
				for i := range b {
					b[i] = byte(v >> (8 * i))
				}
				h.Write(b[:])
			}
			put(uint64(x.total))
			put(uint64(x.left))
			for _, w := range x.bought {
				put(w)
			}
			for _, w := range x.returned {
				put(bits.RotateLeft64(w, 17))
			}
			return h.Sum64()
		},
		DescribeOperation: func(inv, outv any) string {
			in, out := inv.(minput), outv.(moutput)
			return in.desc + " -> " + out.String()
		},
		DescribeState: func(a any) string {
			x := a.(mstate)
			held := 0
			for i := range m.qty {
				if has(x.bought, i) && !has(x.returned, i) {
					held++
				}
			}
			return fmt.Sprintf("total=%d left=%d orders holding units=%d", x.total, x.left, held)
		},
	}
	return nm.ToModel()
}

// from returns the model with the initial states states (a set, as
// porcupine keeps them), for the second part of a split history.
func (m *mmodel) from(states []any) porcupine.Model {
	model := m.porcupine()
	model.Init = func() any { return states }
	return model
}

func (o moutput) String() string {
	switch o.kind {
	case outOK:
		return "ok"
	case outSoldOut:
		return "sold_out"
	case outLimit:
		return "limit_exceeded"
	case outMaybe:
		return "maybe"
	case outBelow:
		return "below_sold"
	}
	return "?"
}

// TestModel checks the model on small histories, each linearizable or not
// by construction.
func TestModel(t *testing.T) {
	type o struct {
		in       minput
		out      moutput
		call, rt int64
	}
	buy := func(user, order int, qty int64, rid ...int) minput {
		return minput{kind: mBuy, user: user, order: order, qty: qty, rid: rid}
	}
	maybe := func(user int, qty int64, alts ...int) minput {
		return minput{kind: mBuy, user: user, qty: qty, alts: alts}
	}
	ok, soldOut, limited, below := moutput{kind: outOK}, moutput{kind: outSoldOut}, moutput{kind: outLimit}, moutput{kind: outBelow}
	left := func(n int64) moutput { return moutput{left: n} }
	okLeft := func(n int64) moutput { return moutput{kind: outOK, left: n} }
	peek := minput{kind: mPeek}
	cancel := func(order int) minput { return minput{kind: mCancel, order: order} }
	expire := func(order int) minput { return minput{kind: mExpire, order: order} }
	set := func(total int64) minput { return minput{kind: mSet, total: total} }
	rebuild := minput{kind: mRebuild}
	del := func(orders ...int) minput { return minput{kind: mDelete, orders: orders} }
	maybeOut := moutput{kind: outMaybe}
	for _, tc := range []struct {
		name     string
		total    int64
		limit    int64
		bucketed bool
		ops      []o
		want     bool
	}{
		{"sold out placed between a read and a buy", 1, 1, false, []o{{buy(0, 0, 1), ok, 0, 10}, {peek, left(1), 1, 2}, {buy(1, 1, 1), soldOut, 3, 4}}, true},
		{"sold out before a read that sees the unit", 1, 1, false, []o{{buy(0, 0, 1), ok, 0, 10}, {peek, left(1), 5, 6}, {buy(1, 1, 1), soldOut, 3, 4}}, false},
		{"two units sell out", 2, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {buy(1, 1, 1), ok, 2, 3}, {buy(2, 2, 1), soldOut, 4, 5}}, true},
		{"a third unit is oversold", 2, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {buy(1, 1, 1), ok, 2, 3}, {buy(2, 2, 1), ok, 4, 5}}, false},
		{"sold out with a unit left", 2, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {buy(1, 1, 1), soldOut, 2, 3}}, false},
		{"sold out while a concurrent buy takes the last", 1, 1, false, []o{{buy(0, 0, 1), ok, 0, 10}, {buy(1, 1, 1), soldOut, 2, 3}}, true},
		{"a cancel gives the unit back", 1, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {cancel(0), ok, 2, 3}, {buy(1, 1, 1), ok, 4, 5}}, true},
		{"a second cancel gives nothing", 2, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {cancel(0), ok, 2, 3}, {cancel(0), ok, 4, 5}, {peek, left(3), 6, 7}}, false},
		{"a second cancel is a no-op", 2, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {cancel(0), ok, 2, 3}, {cancel(0), ok, 4, 5}, {peek, left(2), 6, 7}}, true},
		{"an expiry after a cancel", 2, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {cancel(0), ok, 2, 3}, {expire(0), ok, 4, 5}}, false},
		{"per-user limit", 5, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {buy(0, 1, 1), ok, 2, 3}}, false},
		{"per-user limit refused", 5, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {buy(0, 1, 1), limited, 2, 3}}, true},
		{"limit refused without cause", 5, 2, false, []o{{buy(0, 0, 1), ok, 0, 1}, {buy(0, 1, 1), limited, 2, 3}}, false},
		{"limit refused when sold out too", 1, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {buy(0, 1, 1), limited, 2, 3}}, true},
		{"a replay answers the same order", 1, 1, false, []o{{buy(0, 0, 1, 0), ok, 0, 1}, {buy(0, 0, 1, 0), ok, 2, 3}}, true},
		{"a replay answers another order", 2, 2, false, []o{{buy(0, 0, 1, 0, 1), ok, 0, 1}, {buy(0, 1, 1, 0, 1), ok, 2, 3}}, false},
		{"a maybe buy that happened", 1, 1, false, []o{{maybe(0, 1, 0), moutput{kind: outMaybe}, 0, 1}, {buy(1, 1, 1), soldOut, 2, 3}}, true},
		{"a maybe buy cannot both happen and not", 1, 1, false, []o{{maybe(0, 1, 0), moutput{kind: outMaybe}, 0, 1}, {buy(1, 1, 1), soldOut, 2, 3}, {peek, left(1), 4, 5}}, false},
		{"a stock cut", 5, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {set(3), okLeft(2), 2, 3}, {peek, left(2), 4, 5}}, true},
		{"a stock cut with a wrong answer", 5, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {set(3), okLeft(3), 2, 3}}, false},
		{"a cut below what is taken", 2, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {buy(1, 1, 1), ok, 0, 1}, {set(1), below, 2, 3}}, true},
		{"a cut refused without cause", 2, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {set(1), below, 2, 3}}, false},
		{"a rebuild changes nothing at rest", 2, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {rebuild, ok, 2, 3}, {peek, left(1), 4, 5}}, true},
		{"a rebuild that counts a returned unit twice", 2, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {cancel(0), ok, 2, 3}, {rebuild, ok, 4, 5}, {peek, left(3), 6, 7}}, false},
		{"a deleted dead letter gives its units back", 1, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {del(0), ok, 2, 3}, {buy(1, 1, 1), ok, 4, 5}}, true},
		{"a deleted dead letter gives them back once", 1, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {del(0), ok, 2, 3}, {del(0), ok, 4, 5}, {peek, left(2), 6, 7}}, false},
		{"a dead letter of an order never bought", 1, 1, false, []o{{del(0), ok, 0, 1}}, false},
		{"a delete and a rebuild racing count the units once", 1, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {del(0), ok, 2, 5}, {rebuild, ok, 3, 4}, {peek, left(1), 6, 7}}, true},
		{"a delete and a rebuild racing count the units twice", 1, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {del(0), ok, 2, 5}, {rebuild, ok, 3, 4}, {peek, left(2), 6, 7}}, false},
		{"a delete without an answer", 1, 1, false, []o{{buy(0, 0, 1), ok, 0, 1}, {del(0), maybeOut, 2, 3}, {buy(1, 1, 1), soldOut, 4, 5}}, true},
		{"a split sku reads fewer units while some move", 3, 1, true, []o{{buy(0, 0, 1), ok, 0, 1}, {peek, left(1), 2, 3}}, true},
		{"a split sku never reads more units than left", 3, 1, true, []o{{buy(0, 0, 1), ok, 0, 1}, {peek, left(3), 2, 3}}, false},
		{"a split sku's cut may be refused with units moving", 3, 1, true, []o{{buy(0, 0, 1), ok, 0, 1}, {set(2), below, 2, 3}}, true},
		{"a split sku sold out with units left", 3, 1, true, []o{{buy(0, 0, 1), ok, 0, 1}, {buy(1, 1, 1), soldOut, 2, 3}}, false},
		{"a split sku's read placed before the buy it overlaps", 3, 1, true, []o{{buy(0, 0, 1), ok, 0, 5}, {peek, left(3), 1, 2}, {buy(1, 1, 1), ok, 6, 7}, {peek, left(1), 8, 9}}, true},
		{"a split sku's read between two buys", 3, 1, true, []o{{buy(0, 0, 1), ok, 0, 1}, {peek, left(2), 2, 9}, {buy(1, 1, 1), ok, 3, 4}, {peek, left(2), 5, 6}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &mmodel{bucketed: tc.bucketed, limit: tc.limit, init: mstate{total: tc.total, left: tc.total, bought: make([]uint64, 1), returned: make([]uint64, 1)}}
			users := 0
			for _, x := range tc.ops {
				users = max(users, x.in.user+1)
			}
			m.userOrders = make([][]int, users)
			for i := range 4 {
				m.qty = append(m.qty, 1)
				u := i
				for _, x := range tc.ops {
					if x.in.kind == mBuy && (x.in.order == i || slices.Contains(x.in.alts, i)) {
						u = x.in.user
					}
				}
				if u < users {
					m.userOrders[u] = append(m.userOrders[u], i)
				}
			}
			var hist []porcupine.Operation
			for i, x := range tc.ops {
				hist = append(hist, porcupine.Operation{ClientId: i, Input: x.in, Output: x.out, Call: x.call, Return: x.rt})
			}
			got := porcupine.CheckOperations(m.porcupine(), hist)
			if got != tc.want {
				t.Errorf("linearizable = %v, want %v", got, tc.want)
			}
			for i := range hist {
				in := hist[i].Input.(minput)
				in.desc = fmt.Sprint(i)
				hist[i].Input = in
			}
			if staged := decide(m, m.porcupine(), hist, 0, time.Now().Add(time.Minute)).result; (staged == porcupine.Ok) != tc.want {
				t.Errorf("checkStaged = %v, want linearizable %v", staged, tc.want)
			}
		})
	}
}

// TestSplitQuiet: a history is split only where no operation is open, at
// the point nearest its middle.
func TestSplitQuiet(t *testing.T) {
	op := func(call, ret int64) porcupine.Operation { return porcupine.Operation{Call: call, Return: ret} }
	first, second, ok := splitQuiet([]porcupine.Operation{op(10, 11), op(0, 3), op(4, 9), op(1, 2), op(5, 6)})
	if !ok || len(first) != 2 || len(second) != 3 || first[1].Call != 1 || second[0].Call != 4 {
		t.Errorf("split %v | %v, %v; want the two operations before 4 first", first, second, ok)
	}
	if _, _, ok := splitQuiet([]porcupine.Operation{op(0, 5), op(1, 2), op(3, 6)}); ok {
		t.Error("split a history with no quiescent point")
	}
}

// TestChainedExpiries: a chained expiry is returned only after the one
// before it; unchained, the same history may return them in either order.
func TestChainedExpiries(t *testing.T) {
	m := &mmodel{limit: 1, qty: []int64{1, 1, 1}, userOrders: [][]int{{0}, {1, 2}},
		init: mstate{total: 2, left: 2, bought: make([]uint64, 1), returned: make([]uint64, 1)}}
	ok := moutput{kind: outOK}
	op := func(in minput, out moutput, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: int(call), Input: in, Output: out, Call: call, Return: ret}
	}
	// Order 1 comes back first: user 1 buys again while a read still sees
	// order 0 holding its unit. Chained, order 1's expiry waits for order 0's.
	hist := []porcupine.Operation{
		op(minput{kind: mBuy, user: 0, order: 0, qty: 1}, ok, 0, 1),
		op(minput{kind: mBuy, user: 1, order: 1, qty: 1}, ok, 0, 1),
		op(minput{kind: mExpire, order: 0}, ok, 2, 10),
		op(minput{kind: mExpire, order: 1, after: 1}, ok, 2, 10),
		op(minput{kind: mBuy, user: 1, order: 2, qty: 1}, ok, 3, 4),
		op(minput{kind: mPeek}, moutput{left: 0}, 5, 6),
		op(minput{kind: mPeek}, moutput{left: 1}, 11, 12),
	}
	assert.False(t, porcupine.CheckOperations(m.porcupine(), hist), "chained: order 0 first")
	assert.True(t, porcupine.CheckOperations(m.porcupine(), unchained(hist)), "unchained: either order")
}

// TestWithoutTrailingMaybes: only operations of unknown outcome still open
// when the last other one is called are dropped; a history that needs one
// of them to have taken effect is not linearizable without it, which is why
// the check then tries the whole.
func TestWithoutTrailingMaybes(t *testing.T) {
	m := &mmodel{limit: 1, qty: []int64{1, 1}, userOrders: [][]int{{0}, {1}},
		init: mstate{total: 1, left: 1, bought: make([]uint64, 1), returned: make([]uint64, 1)}}
	ok, maybe := moutput{kind: outOK}, moutput{kind: outMaybe}
	op := func(in minput, out moutput, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: int(call), Input: in, Output: out, Call: call, Return: ret}
	}
	hist := []porcupine.Operation{
		op(minput{kind: mBuy, user: 0, order: 0, qty: 1}, ok, 0, 1),
		op(minput{kind: mExpire, order: 0}, maybe, 2, 20), // open to the end
		op(minput{kind: mBuy, user: 1, alts: []int{1}, qty: 1}, maybe, 3, 4),
		op(minput{kind: mPeek}, moutput{left: 0}, 5, 6),
	}
	got := withoutTrailingMaybes(hist)
	assert.Len(t, got, 3, "the expiry open past the last call is dropped, the buy closed before it is kept")
	assert.True(t, porcupine.CheckOperations(m.porcupine(), got))

	// The read of 1 needs the expiry to have happened: without it, illegal.
	hist[3].Output = moutput{left: 1}
	assert.False(t, porcupine.CheckOperations(m.porcupine(), withoutTrailingMaybes(hist)))
	assert.True(t, porcupine.CheckOperations(m.porcupine(), hist))
}
