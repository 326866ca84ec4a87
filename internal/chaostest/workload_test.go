package chaostest

import (
	"fmt"
	"math/rand"
	"net/http"
	"sync"
	"time"
)

// user is one shopper and what it knows: the orders it was answered 202
// for, the request ids it used, and the orders whose cancel it has not yet
// seen answered (it finishes those at the next barrier, as a client that
// retries until it gets an answer would).
type user struct {
	name      string
	orders    []ownOrder
	rids      []*ridUse
	nextRID   int
	unsettled []ownOrder
}

type ownOrder struct {
	id  string
	sku uint64
	qty int
}

type ridUse struct {
	rid      string
	sku      uint64
	qty      int
	attempts int
}

// userPool hands each shopper goroutine a user no other goroutine is
// using, so every user's requests are sequential: an order in MySQL can
// then be told apart by its user and its time.
type userPool struct {
	mu    sync.Mutex
	users []*user
	busy  []bool
}

func newUserPool(n int) *userPool {
	p := &userPool{busy: make([]bool, n)}
	for i := range n {
		p.users = append(p.users, &user{name: fmt.Sprintf("u%03d", i)})
	}
	return p
}

func (p *userPool) acquire(rng *rand.Rand) *user {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := rng.Intn(len(p.users))
	for p.busy[i] {
		i = (i + 1) % len(p.users)
	}
	p.busy[i] = true
	return p.users[i]
}

func (p *userPool) release(u *user) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, v := range p.users {
		if v == u {
			p.busy[i] = false
		}
	}
}

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// sleep waits d or until stop is closed.
func sleep(d time.Duration, stop <-chan struct{}) {
	select {
	case <-time.After(d):
	case <-stop:
	}
}

// runPhase runs shoppers, the admin and the fault injector for length and
// waits for them; it reports whether Redis lost its data in the phase, and
// whether it failed over.
func (l *lane) runPhase(n int, length time.Duration) (lost, failedOver bool) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range l.spec.shoppers {
		rng := rand.New(rand.NewSource(l.rng.Int63()))
		wg.Go(func() { l.shopper(n, rng, stop) })
	}
	adminRng := rand.New(rand.NewSource(l.rng.Int63()))
	wg.Go(func() { l.admin(n, adminRng, stop) })
	faultRng := rand.New(rand.NewSource(l.rng.Int63()))
	wg.Go(func() { lost, failedOver = l.inject(n, length, faultRng, stop) })
	time.Sleep(length)
	close(stop)
	wg.Wait()
	return lost, failedOver
}

// pick returns the index of a random running process other than avoid
// (-1: any), as a load balancer that knows which instances are up would.
func (l *lane) pick(rng *rand.Rand, avoid int) int {
	var up []int
	for i, p := range l.procs {
		if p.Running() && i != avoid {
			up = append(up, i)
		}
	}
	if len(up) == 0 {
		if avoid >= 0 {
			return l.pick(rng, -1)
		}
		return rng.Intn(len(l.procs))
	}
	return up[rng.Intn(len(up))]
}

// shopper sends one request after another, each as a random free user,
// until stop is closed.
func (l *lane) shopper(phase int, rng *rand.Rand, stop <-chan struct{}) {
	for !stopped(stop) {
		u := l.users.acquire(rng)
		l.shopOnce(phase, rng, u)
		l.users.release(u)
		sleep(time.Duration(rng.Intn(30))*time.Millisecond, stop)
	}
}

func (l *lane) shopOnce(phase int, rng *rand.Rand, u *user) {
	if l.spec.jwt && rng.Intn(50) == 0 {
		l.refused(phase, rng, u)
		return
	}
	r := rng.Intn(100)
	switch {
	case r < 38:
		l.buyNew(phase, rng, u)
	case r < 50 && len(u.rids) > 0:
		// A retry of an earlier request, at any time: after a sell-out, on
		// another instance, after the order was cancelled or expired.
		ru := u.rids[rng.Intn(len(u.rids))]
		ru.attempts++
		l.buy(phase, rng, u, ru.sku, ru.qty, ru.rid, ru.attempts, -1)
	case r < 64 && len(u.orders) > 0:
		l.cancel(phase, rng, u, u.orders[rng.Intn(len(u.orders))], 4)
	case r < 74 && len(u.orders) > 0:
		l.pay(phase, rng, u, u.orders[rng.Intn(len(u.orders))])
	case r < 92:
		sku := l.skus[rng.Intn(len(l.skus))]
		o := &op{kind: opPeek, sku: sku.id, phase: phase, instance: l.pick(rng, -1)}
		l.cl.do(o, l.procs[o.instance].URL(), "GET", fmt.Sprintf("/api/v1/skus/%d", sku.id), nil)
		l.hist.add(o)
	case len(u.orders) > 0:
		ord := u.orders[rng.Intn(len(u.orders))]
		o := &op{kind: opGetOrder, user: u.name, sku: ord.sku, order: ord.id, phase: phase, instance: l.pick(rng, -1)}
		l.cl.do(o, l.procs[o.instance].URL(), "GET", "/api/v1/orders/"+ord.id, nil)
		l.hist.add(o)
	default:
		l.buyNew(phase, rng, u)
	}
}

// refused sends a request with a token the lane must refuse (expired, or
// signed with another key): a buy with a request id of its own, so that
// an order it made would be found, or a cancel or payment of one of the
// shopper's orders. It must be answered 401 and change nothing.
func (l *lane) refused(phase int, rng *rand.Rand, u *user) {
	kind := tokenExpired
	if rng.Intn(2) == 0 {
		kind = tokenForged
	}
	o := &op{user: u.name, badToken: kind, phase: phase, instance: l.pick(rng, -1)}
	switch r := rng.Intn(3); {
	case r == 0 && len(u.orders) > 0:
		ord := u.orders[rng.Intn(len(u.orders))]
		o.kind, o.sku, o.order = opCancel, ord.sku, ord.id
		l.cl.do(o, l.procs[o.instance].URL(), "POST", "/api/v1/orders/"+ord.id+"/cancel", nil)
	case r == 1 && len(u.orders) > 0:
		ord := u.orders[rng.Intn(len(u.orders))]
		o.kind, o.sku, o.order = opPay, ord.sku, ord.id
		l.cl.do(o, l.procs[o.instance].URL(), "POST", "/api/v1/orders/"+ord.id+"/pay", nil)
	default:
		sku := l.skus[rng.Intn(len(l.skus))]
		u.nextRID++
		o.kind, o.sku, o.qty, o.rid, o.attempt = opBuy, sku.id, 1, fmt.Sprintf("%s-bad%d", u.name, u.nextRID), 1
		l.cl.do(o, l.procs[o.instance].URL(), "POST", "/api/v1/orders", map[string]any{"sku_id": sku.id, "qty": 1, "request_id": o.rid})
	}
	l.hist.add(o)
}

// buyNew buys 1 to per_user_limit units (now and then one more, which the
// limit refuses), with a request id half of the time; a request with one
// that gets no clear answer is retried on another instance. A request
// without one answered 503 unavailable is retried with the request id the
// answer names, when it names one, as a client following the API does.
func (l *lane) buyNew(phase int, rng *rand.Rand, u *user) {
	sku := l.skus[rng.Intn(len(l.skus))]
	qty := 1 + rng.Intn(sku.limit)
	if rng.Intn(40) == 0 {
		qty = sku.limit + 1
	}
	var ru *ridUse
	var o *op
	if rng.Intn(2) == 0 {
		o = l.buy(phase, rng, u, sku.id, qty, "", 1, -1)
		if o.code != "unavailable" || o.outRID == "" {
			return
		}
		ru = &ridUse{rid: o.outRID, sku: sku.id, qty: qty, attempts: 1}
	} else {
		u.nextRID++
		ru = &ridUse{rid: fmt.Sprintf("%s-r%d", u.name, u.nextRID), sku: sku.id, qty: qty, attempts: 1}
		o = l.buy(phase, rng, u, sku.id, qty, ru.rid, 1, -1)
	}
	u.rids = append(u.rids, ru)
	for try := 0; try < 2 && !o.definite() && rng.Intn(10) < 7; try++ {
		time.Sleep(time.Duration(50+rng.Intn(250)) * time.Millisecond)
		ru.attempts++
		o = l.buy(phase, rng, u, sku.id, qty, ru.rid, ru.attempts, o.instance)
	}
}

func (l *lane) buy(phase int, rng *rand.Rand, u *user, sku uint64, qty int, rid string, attempt, avoid int) *op {
	o := &op{kind: opBuy, user: u.name, sku: sku, qty: qty, rid: rid, attempt: attempt, phase: phase, instance: l.pick(rng, avoid)}
	body := map[string]any{"sku_id": sku, "qty": qty}
	if rid != "" {
		body["request_id"] = rid
	}
	l.cl.do(o, l.procs[o.instance].URL(), "POST", "/api/v1/orders", body)
	l.hist.add(o)
	if o.status == http.StatusAccepted && o.outOrder != "" {
		known := false
		for _, x := range u.orders {
			known = known || x.id == o.outOrder
		}
		if !known {
			u.orders = append(u.orders, ownOrder{id: o.outOrder, sku: sku, qty: qty})
		}
	}
	return o
}

// cancel cancels ord, retrying up to tries times while the answer is not
// clear; an order still without a clear answer is finished at the barrier.
func (l *lane) cancel(phase int, rng *rand.Rand, u *user, ord ownOrder, tries int) bool {
	avoid := -1
	for attempt := 1; attempt <= tries; attempt++ {
		o := &op{kind: opCancel, user: u.name, sku: ord.sku, order: ord.id, attempt: attempt, phase: phase, instance: l.pick(rng, avoid)}
		l.cl.do(o, l.procs[o.instance].URL(), "POST", "/api/v1/orders/"+ord.id+"/cancel", nil)
		l.hist.add(o)
		if o.definite() {
			for i, x := range u.unsettled {
				if x.id == ord.id {
					u.unsettled = append(u.unsettled[:i], u.unsettled[i+1:]...)
					break
				}
			}
			return true
		}
		avoid = o.instance
		time.Sleep(time.Duration(100+rng.Intn(300)) * time.Millisecond)
	}
	for _, x := range u.unsettled {
		if x.id == ord.id {
			return false
		}
	}
	u.unsettled = append(u.unsettled, ord)
	return false
}

func (l *lane) pay(phase int, rng *rand.Rand, u *user, ord ownOrder) {
	avoid := -1
	for attempt := 1; attempt <= 3; attempt++ {
		o := &op{kind: opPay, user: u.name, sku: ord.sku, order: ord.id, attempt: attempt, phase: phase, instance: l.pick(rng, avoid)}
		l.cl.do(o, l.procs[o.instance].URL(), "POST", "/api/v1/orders/"+ord.id+"/pay", nil)
		l.hist.add(o)
		if o.definite() {
			return
		}
		avoid = o.instance
		time.Sleep(time.Duration(100+rng.Intn(300)) * time.Millisecond)
	}
}

// admin changes stock and reconciles now and then until stop is closed:
// top-ups, cuts (some below what is taken, which must be refused), upserts
// of the whole SKU, reconciles, and actions on dead letters (deletes,
// requeues and reconciles racing each other). A stock change without a
// clear answer is sent again until it gets one, as an operator would.
func (l *lane) admin(phase int, rng *rand.Rand, stop <-chan struct{}) {
	for {
		sleep(time.Duration(300+rng.Intn(900))*time.Millisecond, stop)
		if stopped(stop) {
			return
		}
		sku := l.skus[rng.Intn(len(l.skus))]
		sku.mu.Lock()
		cur := sku.total
		sku.mu.Unlock()
		r := rng.Intn(100)
		switch {
		case r < 30:
			l.setStock(phase, rng, sku, min(cur+1+int64(rng.Intn(5)), 80), opSetStock, 10)
		case r < 60:
			l.setStock(phase, rng, sku, max(cur-1-int64(rng.Intn(8)), 1), opSetStock, 10)
		case r < 70:
			l.setStock(phase, rng, sku, max(cur+int64(rng.Intn(7))-3, 1), opUpsert, 10)
		case r < 82:
			ok := l.reconcileOnce(phase, rng, sku.id).status == http.StatusOK
			sku.mu.Lock()
			sku.pendingReconcile = !ok
			sku.mu.Unlock()
		default:
			l.actOnDead(phase, rng, sku, false)
		}
	}
}

// reconcileOnce sends one reconcile of sku, recorded.
func (l *lane) reconcileOnce(phase int, rng *rand.Rand, sku uint64) *op {
	o := &op{kind: opReconcile, sku: sku, phase: phase, instance: l.pick(rng, -1)}
	l.cl.do(o, l.procs[o.instance].URL(), "POST", fmt.Sprintf("/admin/skus/%d/reconcile", sku), nil)
	l.hist.add(o)
	return o
}

// setStock sets sku's stock_total with PUT /admin/skus/{id}/stock or, for
// opUpsert, by posting the whole SKU again; it retries up to tries times
// while the answer is not clear and reports whether it got one.
func (l *lane) setStock(phase int, rng *rand.Rand, sku *skuInfo, total int64, kind string, tries int) bool {
	avoid := -1
	sku.mu.Lock()
	cut := total < sku.total || sku.pendingTotal != 0
	sku.mu.Unlock()
	for attempt := 1; attempt <= tries; attempt++ {
		o := &op{kind: kind, sku: sku.id, total: total, cut: cut, attempt: attempt, phase: phase, instance: l.pick(rng, avoid)}
		if kind == opUpsert {
			body := map[string]any{"stock": total}
			for k, v := range sku.spec {
				body[k] = v
			}
			l.cl.do(o, l.procs[o.instance].URL(), "POST", "/admin/skus", body)
		} else {
			l.cl.do(o, l.procs[o.instance].URL(), "PUT", fmt.Sprintf("/admin/skus/%d/stock", sku.id), map[string]any{"stock_total": total})
		}
		l.hist.add(o)
		if o.definite() {
			sku.mu.Lock()
			if o.status == http.StatusOK {
				sku.total = o.outTotal
			}
			sku.pendingTotal, sku.pendingKind = 0, ""
			sku.mu.Unlock()
			return true
		}
		avoid = o.instance
		time.Sleep(time.Duration(100+rng.Intn(200)) * time.Millisecond)
	}
	sku.mu.Lock()
	sku.pendingTotal, sku.pendingKind = total, kind // finished at the barrier
	sku.mu.Unlock()
	return false
}
