package console

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/seckill/seckill/internal/sale"
)

// The live feed: one sampler per instance reads, once per Interval, what
// the connected consoles show — the admin list for the sales page, one
// SKU's figures and queue for a sale's page, its audit every AuditEvery —
// and hands the same frame to every console watching. Its cost is one read
// per interval whatever the number of consoles and buys. It runs only while
// a console is connected (and Linger after the last leaves, so a reload
// keeps the chart's history).

// frame is one server-sent event.
type frame struct {
	event string
	data  []byte
}

// subscriber is one connected console: the SKU it watches (0 for the
// sales page) and its frames. A frame it has no room for is dropped: the
// next one, a second later, says the same things anew.
type subscriber struct {
	sku    uint64
	frames chan frame
}

// errFull: the feed has its most subscribers.
var errFull = errors.New("console: too many live consoles on this instance")

// Point is one sample of a sale for its chart: when, the orders per second
// since the sample before, and the units left in Redis.
type Point struct {
	At              int64   `json:"t"` // Unix milliseconds
	OrdersPerSecond float64 `json:"ops"`
	Left            *int64  `json:"left"`
}

// Row is one SKU as the console shows it: its admin list entry and its
// orders per second since the sample before (null at the first sample).
type Row struct {
	sale.AdminSKUView
	OrdersPerSecond *float64 `json:"orders_per_second"`
}

// salesFrame is the sales page's frame.
type salesFrame struct {
	At    time.Time `json:"at"`
	Items []Row     `json:"items"`
	// More is true when there are more SKUs than the page shows.
	More bool `json:"more"`
}

// saleFrame is a sale page's frame: the SKU, its queue and the drain's lag
// (the age of the oldest order waiting for it, 0 when none waits).
type saleFrame struct {
	At         time.Time         `json:"at"`
	SKU        *Row              `json:"sku"`
	Queue      *sale.QueueReport `json:"queue"`
	LagSeconds float64           `json:"lag_seconds"`
	Point      Point             `json:"point"`
}

// problemFrame says why a sample could not be read.
type problemFrame struct {
	Detail string `json:"detail"`
}

// feedOptions configure a feed.
type feedOptions struct {
	Interval, AuditEvery, Linger time.Duration
	MaxSubscribers               int
	// MaxListed bounds the SKUs the sales page shows (the first, by id).
	MaxListed int
	// History bounds the points of a sale's chart.
	History int
	Now     func() time.Time
	Log     *slog.Logger
}

type feed struct {
	sales Sales
	o     feedOptions

	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	running bool
	closed  bool
	idle    time.Time // when the last subscriber left
	history map[uint64][]Point
	audits  map[uint64]json.RawMessage // the last audit of each watched SKU
	// watchedAt is when each SKU with a history was last watched: its
	// history is kept for Linger after, so that a reload of its page
	// finds it while other pages keep the sampler running.
	watchedAt map[uint64]time.Time
	// ctx ends the reads in progress when the feed closes.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the sampler and its audits
}

func newFeed(sales Sales, o feedOptions) *feed {
	ctx, cancel := context.WithCancel(context.Background())
	return &feed{sales: sales, o: o, subs: map[*subscriber]struct{}{}, ctx: ctx, cancel: cancel,
		history: map[uint64][]Point{}, audits: map[uint64]json.RawMessage{}, watchedAt: map[uint64]time.Time{}}
}

// subscribe connects a console watching sku (0: the sales page) and starts
// the sampler if it is not running. The first frames are the sale's
// history and last audit, when known.
func (f *feed) subscribe(sku uint64) (*subscriber, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, errClosed
	}
	if len(f.subs) >= f.o.MaxSubscribers {
		return nil, errFull
	}
	s := &subscriber{sku: sku, frames: make(chan frame, 8)}
	if sku != 0 {
		if h := f.history[sku]; len(h) > 0 {
			data, _ := json.Marshal(h)
			s.frames <- frame{"history", data}
		}
		if a := f.audits[sku]; a != nil {
			s.frames <- frame{"audit", a}
		}
	}
	f.subs[s] = struct{}{}
	if !f.running {
		f.running = true
		f.wg.Add(1)
		go f.run()
	}
	return s, nil
}

var errClosed = errors.New("console: shutting down")

// unsubscribe disconnects s.
func (f *feed) unsubscribe(s *subscriber) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.subs, s)
	if len(f.subs) == 0 {
		f.idle = f.o.Now()
	}
}

// close stops the sampler and waits for it and its audits.
func (f *feed) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.cancel()
	f.wg.Wait()
}

// watched returns whether the sales page is watched and which SKUs are; ok
// is false when the sampler should stop (nobody for Linger, or closing).
func (f *feed) watched() (list bool, skus map[uint64]bool, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || len(f.subs) == 0 && f.o.Now().Sub(f.idle) >= f.o.Linger {
		f.running = false
		clear(f.history)
		clear(f.audits)
		clear(f.watchedAt)
		return false, nil, false
	}
	skus = map[uint64]bool{}
	now := f.o.Now()
	for s := range f.subs {
		if s.sku == 0 {
			list = true
		} else {
			skus[s.sku] = true
			f.watchedAt[s.sku] = now
		}
	}
	return list, skus, true
}

// publish hands a frame to the subscribers watching sku (0: the sales
// page).
func (f *feed) publish(sku uint64, event string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		f.o.Log.Error("console: encode a live frame", "err", err.Error())
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if event == "audit" {
		f.audits[sku] = data
	}
	for s := range f.subs {
		if s.sku == sku {
			select {
			case s.frames <- frame{event, data}:
			default:
			}
		}
	}
}

// record adds p to sku's history and forgets the history of SKUs nobody
// has watched for Linger.
func (f *feed) record(sku uint64, p Point, watched map[uint64]bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := append(f.history[sku], p)
	if len(h) > f.o.History {
		h = h[len(h)-f.o.History:]
	}
	f.history[sku] = h
	now := f.o.Now()
	for id, at := range f.watchedAt {
		if !watched[id] && now.Sub(at) >= f.o.Linger {
			delete(f.history, id)
			delete(f.audits, id)
			delete(f.watchedAt, id)
		}
	}
}

// count is what orders per second are computed from: the orders of a SKU
// in SQL and in its queue, at a time.
type count struct {
	orders int64
	at     time.Time
}

// run samples until nobody watches or the feed closes.
func (f *feed) run() {
	defer f.wg.Done()
	t := time.NewTicker(f.o.Interval)
	defer t.Stop()
	last := map[uint64]count{}
	audited := map[uint64]time.Time{}
	auditing := map[uint64]bool{}
	var mu sync.Mutex // guards auditing, shared with the audits
	for {
		list, skus, ok := f.watched()
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(f.ctx, f.o.Interval*3)
		f.sample(ctx, list, skus, last)
		cancel()
		now := f.o.Now()
		for id := range skus {
			mu.Lock()
			due := !auditing[id] && now.Sub(audited[id]) >= f.o.AuditEvery
			if due {
				auditing[id], audited[id] = true, now
			}
			mu.Unlock()
			if due {
				f.wg.Go(func() {
					f.audit(id)
					mu.Lock()
					delete(auditing, id)
					mu.Unlock()
				})
			}
		}
		select {
		case <-f.ctx.Done():
			f.watched() // marks the sampler stopped
			return
		case <-t.C:
		}
	}
}

// sample reads and publishes one frame for the sales page (when list) and
// one per SKU of skus. last holds the previous counts and is updated.
func (f *feed) sample(ctx context.Context, list bool, skus map[uint64]bool, last map[uint64]count) {
	rows := map[uint64]*Row{}
	if list {
		views, more, err := f.list(ctx)
		if err != nil {
			f.problem(0, err)
		} else {
			fr := salesFrame{At: f.o.Now().UTC(), Items: make([]Row, 0, len(views)), More: more}
			for _, v := range views {
				r := Row{AdminSKUView: v, OrdersPerSecond: perSecond(last, v, f.o.Now())}
				fr.Items = append(fr.Items, r)
				rows[v.ID] = &fr.Items[len(fr.Items)-1]
			}
			f.publish(0, "sales", fr)
		}
	}
	for id := range skus {
		r := rows[id]
		if r == nil {
			v, err := lookup(ctx, f.sales, id)
			if err != nil {
				f.problem(id, err)
				continue
			}
			r = &Row{AdminSKUView: *v, OrdersPerSecond: perSecond(last, *v, f.o.Now())}
		}
		q, err := f.sales.Queue(ctx, id, 0)
		if err != nil {
			f.problem(id, err)
			continue
		}
		now := f.o.Now()
		fr := saleFrame{At: now.UTC(), SKU: r, Queue: q}
		if q.OldestDue != nil && q.OldestDue.Before(now) {
			fr.LagSeconds = now.Sub(*q.OldestDue).Seconds()
		}
		fr.Point = Point{At: now.UnixMilli(), Left: r.RedisLeft}
		if r.OrdersPerSecond != nil {
			fr.Point.OrdersPerSecond = *r.OrdersPerSecond
		}
		f.record(id, fr.Point, skus)
		f.publish(id, "sale", fr)
	}
	for id := range last {
		if _, seen := rows[id]; !seen && !skus[id] {
			delete(last, id)
		}
	}
}

// perSecond is the orders per second of v since the count in last, which
// it replaces; nil for the first count.
func perSecond(last map[uint64]count, v sale.AdminSKUView, now time.Time) *float64 {
	c := count{orders: v.Orders + v.QueuedOrders, at: now}
	prev, ok := last[v.ID]
	last[v.ID] = c
	dt := c.at.Sub(prev.at).Seconds()
	if !ok || dt <= 0 {
		return nil
	}
	// The queue and SQL are read one after the other, so an order drained
	// in between can make the count step back: no negative rate.
	ops := max(0, float64(c.orders-prev.orders)/dt)
	return &ops
}

// list reads the admin list's first MaxListed SKUs; more is true when
// there are others.
func (f *feed) list(ctx context.Context) (views []sale.AdminSKUView, more bool, err error) {
	var after uint64
	for {
		page, next, err := f.sales.AdminSKUs(ctx, after, min(100, f.o.MaxListed-len(views)))
		if err != nil {
			return nil, false, err
		}
		views = append(views, page...)
		if next == 0 {
			return views, false, nil
		}
		if len(views) >= f.o.MaxListed {
			return views, true, nil
		}
		after = next
	}
}

// audit reads SKU id's audit and publishes it.
func (f *feed) audit(id uint64) {
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	r, err := f.sales.Audit(ctx, id)
	if err != nil {
		if ctx.Err() == nil {
			f.problem(id, err)
		}
		return
	}
	f.publish(id, "audit", r)
}

// problem tells the consoles watching sku that a read failed.
func (f *feed) problem(sku uint64, err error) {
	f.o.Log.Warn("console: live read failed", "sku", sku, "err", err.Error())
	f.publish(sku, "problem", problemFrame{Detail: "could not read the sale's figures: " + err.Error()})
}
