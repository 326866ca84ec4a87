package chaostest

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"sync"
	"time"

	"github.com/seckill/seckill/internal/stock"
)

// deadLetter is a dead letter the run listed: its task and, for a task
// that carries orders, the orders in it.
type deadLetter struct {
	sku    uint64
	task   string
	typ    string
	orders []stock.OrderTask
	seen   time.Time // first listed
}

// listDead lists sku's dead letters (GET /admin/skus/{id}/dead, recorded)
// and remembers each with its orders; ok is false without an answer.
func (l *lane) listDead(phase int, rng *rand.Rand, sku uint64) (list []*deadLetter, ok bool) {
	o := &op{kind: opDeadList, sku: sku, phase: phase, instance: l.pick(rng, -1)}
	l.cl.do(o, l.procs[o.instance].URL(), "GET", fmt.Sprintf("/admin/skus/%d/dead?n=100", sku), nil)
	l.hist.add(o)
	if o.status != http.StatusOK {
		return nil, false
	}
	var body struct {
		Dead []struct {
			ID      string          `json:"id"`
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		} `json:"dead"`
	}
	if err := json.Unmarshal([]byte(o.raw), &body); err != nil {
		l.viol.addSKU(sku, "answer", "%s: dead letters do not decode: %v: %s", o, err, o.raw)
		return nil, false
	}
	l.deadMu.Lock()
	defer l.deadMu.Unlock()
	for _, d := range body.Dead {
		dl := l.dead[d.ID]
		if dl == nil {
			dl = &deadLetter{sku: sku, task: d.ID, typ: d.Type, seen: o.ret}
			if d.Type == stock.TaskCreate {
				orders, err := stock.DecodeOrders(d.Payload)
				if err != nil {
					l.viol.addSKU(sku, "answer", "%s: dead letter %s: orders do not decode: %v", o, d.ID, err)
				}
				dl.orders = orders
			}
			l.dead[d.ID] = dl
		}
		list = append(list, dl)
	}
	return list, true
}

// deadLetterOf is the listed dead letter with task id, nil if none.
func (l *lane) deadLetterOf(task string) *deadLetter {
	l.deadMu.Lock()
	defer l.deadMu.Unlock()
	return l.dead[task]
}

// actOnDead lists sku's dead letters and, if there are any, acts on one
// of them as operators racing each other would: a delete, a requeue and
// a reconcile of the SKU sent at once to different instances (two or
// three of them; at a barrier at least a delete or a requeue). It reports
// whether there may be dead letters left: there were some, or the list got
// no answer.
func (l *lane) actOnDead(phase int, rng *rand.Rand, sku *skuInfo, atBarrier bool) bool {
	list, ok := l.listDead(phase, rng, sku.id)
	if len(list) == 0 {
		if !ok {
			time.Sleep(200 * time.Millisecond)
		}
		return !ok
	}
	d := list[rng.Intn(len(list))]
	var acts []string
	switch r := rng.Intn(6); r {
	case 0:
		acts = []string{opDeadDel, opDeadRequeue, opReconcile}
	case 1:
		acts = []string{opDeadDel, opReconcile}
	case 2:
		acts = []string{opDeadRequeue, opReconcile}
	case 3:
		acts = []string{opDeadDel, opDeadRequeue}
	case 4:
		acts = []string{opDeadDel}
	default:
		acts = []string{opDeadRequeue}
	}
	if atBarrier && rng.Intn(3) == 0 {
		acts = append(acts, opReconcile) // another reconcile racing
	}
	ops := make([]*op, len(acts))
	avoid := -1
	for i, kind := range acts {
		ops[i] = &op{kind: kind, sku: sku.id, phase: phase, instance: l.pick(rng, avoid)}
		avoid = ops[i].instance
		if kind != opReconcile {
			ops[i].task = d.task
		}
	}
	var wg sync.WaitGroup
	for _, o := range ops {
		wg.Go(func() {
			base := l.procs[o.instance].URL()
			switch o.kind {
			case opDeadDel:
				l.cl.do(o, base, "DELETE", fmt.Sprintf("/admin/skus/%d/dead/%s", sku.id, o.task), nil)
			case opDeadRequeue:
				l.cl.do(o, base, "POST", fmt.Sprintf("/admin/skus/%d/dead/%s/requeue", sku.id, o.task), nil)
			default:
				l.cl.do(o, base, "POST", fmt.Sprintf("/admin/skus/%d/reconcile", sku.id), nil)
			}
			l.hist.add(o)
		})
	}
	wg.Wait()
	return true
}

// clearDead acts on every SKU's dead letters until none is left, as the
// operator does before a sale can be audited.
func (l *lane) clearDead(n int, rng *rand.Rand) {
	for _, sku := range l.skus {
		l.clearDeadOf(n, rng, sku)
	}
}

// clearDeadOf acts on sku's dead letters until none is left.
func (l *lane) clearDeadOf(n int, rng *rand.Rand, sku *skuInfo) {
	for round := 0; l.actOnDead(n, rng, sku, true); round++ {
		if round == 40 {
			l.viol.addSKU(sku.id, "dead", "barrier %d: sku %d still has dead letters after 40 rounds of deletes and requeues", n, sku.id)
			return
		}
	}
}
