package chaostest

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/apitest"
	"github.com/seckill/seckill/internal/testutil"
)

// Operation kinds.
const (
	opBuy         = "buy"
	opCancel      = "cancel"
	opPay         = "pay"
	opGetOrder    = "get_order"
	opPeek        = "get_sku"
	opSetStock    = "set_stock"  // PUT /admin/skus/{id}/stock
	opUpsert      = "upsert_sku" // POST /admin/skus with the SKU's id
	opReconcile   = "reconcile"
	opDeadList    = "dead_list"    // GET /admin/skus/{id}/dead
	opDeadDel     = "dead_delete"  // DELETE /admin/skus/{id}/dead/{task_id}
	opDeadRequeue = "dead_requeue" // POST /admin/skus/{id}/dead/{task_id}/requeue
)

// op is one request of the history: what was asked, of which instance,
// when, and what came back.
type op struct {
	id       int
	kind     string
	user     string // "" for admin operations
	sku      uint64
	qty      int
	rid      string // request id of a buy, "" without
	order    string // the order a cancel, pay or read names
	total    int64  // the stock_total a stock change asks for
	cut      bool   // the stock change may lower the total (as far as the admin knows)
	attempt  int    // 1 for the first request of a buy, cancel, pay or stock change; more for its retries
	instance int
	phase    int
	task     string // the dead letter a delete or requeue names
	// badToken is the kind of refused token the request was sent with
	// (tokenExpired, tokenForged), "" for none: it must be answered 401.
	badToken string

	call, ret time.Time
	status    int    // HTTP status, 0 without an answer
	code      string // the error code of an error body
	raw       string
	err       string // transport error: no answer (connection reset, time-out)
	// unsent: the transport error came before the request was sent (the
	// connection could not be made), so the request did nothing.
	unsent    bool
	outOrder  string // order_id of a 202
	left      int64  // stock_left of a stock read or a stock change
	outTotal  int64  // stock_total of a stock change's answer
	outStatus string // status of an order read, pay or cancel
	outRID    string // request_id of a buy's 503: the id to retry with
}

// answered reports whether the server answered at all.
func (o *op) answered() bool { return o.err == "" }

// definite reports whether the answer says what happened: anything but no
// answer and 503 (busy, unavailable: the operation may or may not have
// taken effect).
func (o *op) definite() bool { return o.answered() && o.status != http.StatusServiceUnavailable }

// outcome is the short form of the answer: "202", "409 sold_out",
// "503 busy", "no answer".
func (o *op) outcome() string {
	switch {
	case !o.answered():
		return "no answer"
	case o.code != "":
		return fmt.Sprintf("%d %s", o.status, o.code)
	default:
		return fmt.Sprint(o.status)
	}
}

func (o *op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s", o.id, o.kind)
	if o.user != "" {
		fmt.Fprintf(&b, " user=%s", o.user)
	}
	fmt.Fprintf(&b, " sku=%d", o.sku)
	if o.qty > 0 {
		fmt.Fprintf(&b, " qty=%d", o.qty)
	}
	if o.rid != "" {
		fmt.Fprintf(&b, " rid=%s", o.rid)
	}
	if o.order != "" {
		fmt.Fprintf(&b, " order=%s", o.order)
	}
	if o.task != "" {
		fmt.Fprintf(&b, " task=%s", o.task)
	}
	if o.badToken != "" {
		fmt.Fprintf(&b, " token=%s", o.badToken)
	}
	if o.kind == opSetStock || o.kind == opUpsert {
		fmt.Fprintf(&b, " total=%d", o.total)
	}
	fmt.Fprintf(&b, " attempt=%d on=%d call=%s ret=%s -> %s", o.attempt, o.instance, clock(o.call), clock(o.ret), o.outcome())
	if o.outOrder != "" {
		fmt.Fprintf(&b, " order_id=%s", o.outOrder)
	}
	if o.outRID != "" {
		fmt.Fprintf(&b, " request_id=%s", o.outRID)
	}
	if o.kind == opPeek || (o.status == http.StatusOK && (o.kind == opSetStock || o.kind == opUpsert)) {
		fmt.Fprintf(&b, " left=%d", o.left)
	}
	if o.err != "" {
		fmt.Fprintf(&b, " (%s)", o.err)
	}
	return b.String()
}

// clock formats t as seconds since the start of the run.
func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%.3fs", t.Sub(runStart).Seconds())
}

// runStart is when the run began; every time in its output counts from it.
var runStart time.Time

// fault is one injected fault.
type fault struct {
	kind     string
	target   string
	from, to time.Time
	dataLoss bool // Redis lost everything it held at from
	// failover: a Redis primary was replaced; what it had not replicated
	// is gone (with wait_replicas, nothing a shopper was told of).
	failover bool
	// live: the primary replaced was still running (a stall past the
	// Sentinels' down-after, or SENTINEL FAILOVER). It went on answering,
	// with a replica that had not been repointed yet acknowledging its
	// writes, until the Sentinels made it a replica: what it took in
	// between is gone, wait_replicas or not
	// (docs/design/guarantees.md#across-a-failover-rediswait_replicas).
	// switched is when the run saw the new primary.
	live     bool
	switched time.Time
	// committed are the orders in MySQL just before a data loss; an
	// accepted order not among them was only in Redis.
	committed map[string]bool
	note      string
}

func (f fault) String() string {
	s := fmt.Sprintf("%s %s %s..%s", f.kind, f.target, clock(f.from), clock(f.to))
	if f.note != "" {
		s += " " + f.note
	}
	return s
}

// history is everything the run did, shared by its goroutines.
type history struct {
	mu     sync.Mutex
	ops    []*op
	faults []fault
}

func (h *history) add(o *op) {
	h.mu.Lock()
	o.id = len(h.ops)
	h.ops = append(h.ops, o)
	h.mu.Unlock()
}

func (h *history) addFault(f fault) {
	h.mu.Lock()
	h.faults = append(h.faults, f)
	h.mu.Unlock()
}

// snapshot returns the operations and faults so far.
func (h *history) snapshot() ([]*op, []fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*op(nil), h.ops...), append([]fault(nil), h.faults...)
}

// client sends the run's requests.
type client struct {
	testutil.Caller
}

// newClient returns a client whose requests each wait at most timeout,
// and whose every answer, whatever the fault, is also held to
// api/openapi.yaml.
func newClient(t *testing.T, token string, timeout time.Duration) *client {
	return &client{testutil.Caller{AdminToken: token, HTTP: &http.Client{
		Timeout:   timeout,
		Transport: apitest.Transport(t, &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 128, IdleConnTimeout: 30 * time.Second}),
	}}}
}

// do sends one request for o to base and fills in o's answer. A request
// with a bad token carries that token instead of the shopper's.
func (c *client) do(o *op, base, method, path string, body any) {
	var r testutil.Reply
	req, err := c.Request(base, method, path, o.user, body)
	if err == nil {
		if o.badToken != "" {
			req.Header.Set("Authorization", "Bearer "+badToken(o.badToken, o.user))
		}
		r, err = c.Send(req)
	}
	o.call, o.ret = r.Start, r.Start.Add(r.Took)
	if err != nil {
		o.err = shortErr(err)
		var dial *net.OpError
		o.unsent = errors.As(err, &dial) && dial.Op == "dial"
		return
	}
	o.status, o.raw = r.Status, r.Raw
	if r.Status >= 400 {
		o.code = r.Str("error")
		o.outRID = r.Str("request_id")
		return
	}
	o.outOrder = r.Str("order_id")
	if o.kind != opBuy {
		o.outStatus = r.Str("status")
	}
	o.left, o.outTotal = r.Num("stock_left"), r.Num("stock_total")
}

// shortErr names a transport error without its URL.
func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && strings.Contains(s, "http://") {
		s = s[i+2:]
	}
	return s
}
