package faulttest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/apitest"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/sale"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

const adminToken = "faulttest-admin-token-0123456789abcdef"

// deployment is the Redis and MySQL one scenario runs on and the seckill
// processes it starts on them.
type deployment struct {
	t      *testing.T
	env    map[string]string
	rdb    *redis.Client // inspection of the deployment's keys
	prefix string
	db     *sql.DB
	client *http.Client
	api    []*proc // processes serving HTTP, in the order shoppers are spread over them
}

// newDeployment configures processes for the Redis at redisAddr (keys under
// prefix) and the MySQL database dsn, with short leases and sweeps so that
// recovery shows within seconds. extra overrides or adds variables.
func newDeployment(t *testing.T, redisAddr, prefix, dsn string, extra map[string]string) *deployment {
	t.Helper()
	env := testutil.RecoveryEnv(redisAddr, prefix, dsn, adminToken)
	maps.Copy(env, extra)
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { _ = rdb.Close() })
	// Every exchange, faults included, is held to api/openapi.yaml.
	d := &deployment{t: t, env: env, rdb: rdb, prefix: prefix, db: db, client: &http.Client{
		Timeout:   20 * time.Second,
		Transport: apitest.Transport(t, &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}),
	}}
	t.Cleanup(d.client.CloseIdleConnections)
	return d
}

// sharedDeployment runs on the shared Redis (a unique prefix) and a
// database of its own on the shared MySQL, for scenarios that fault only
// seckill.
func sharedDeployment(t *testing.T, extra map[string]string) *deployment {
	t.Helper()
	_, prefix := testsvc.Redis(t)
	return newDeployment(t, testsvc.Env(t, testsvc.EnvRedis), prefix, testsvc.ServerMySQL(t), extra)
}

// serve adds a process running `seckill args...` that serves HTTP and
// starts it.
func (d *deployment) serve(name string, args ...string) *proc {
	d.t.Helper()
	p := newProc(d.t, name, d.env, true, args...)
	p.start()
	d.api = append(d.api, p)
	return p
}

// worker adds a `seckill worker` process, with extra variables on top of
// the deployment's, and starts it.
func (d *deployment) worker(name string, extra map[string]string) *proc {
	d.t.Helper()
	env := map[string]string{}
	for k, v := range d.env {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	p := newProc(d.t, name, env, false, "worker")
	p.start()
	return p
}

// live returns the first API process that is running.
func (d *deployment) live() *proc {
	for _, p := range d.api {
		if p.Running() {
			return p
		}
	}
	d.t.Fatal("no seckill process is running")
	return nil
}

// answer is an instance's reply, or the transport error that stood in for
// one.
type answer struct {
	testutil.Reply
	Err error
}

// call sends one request to base and reads the answer.
func (d *deployment) call(base, method, path, user string, body any) answer {
	r, err := d.caller().Do(base, method, path, user, body)
	return answer{Reply: r, Err: err}
}

func (d *deployment) caller() testutil.Caller {
	return testutil.Caller{HTTP: d.client, AdminToken: adminToken}
}

// admin sends an admin request to a live process and requires status want.
func (d *deployment) admin(method, path string, body any, want int) answer {
	d.t.Helper()
	a := d.call(d.live().URL(), method, path, "", body)
	require.NoError(d.t, a.Err)
	require.Equal(d.t, want, a.Status, "%s %s: %s", method, path, a.Raw)
	return a
}

// seed creates a SKU on sale now with stock units, one per shopper.
func (d *deployment) seed(stock int64) uint64 {
	d.t.Helper()
	now := time.Now().UTC()
	a := d.admin("POST", "/admin/skus", map[string]any{
		"name": "Phone", "price_cents": 99900, "stock": stock, "per_user_limit": 1,
		"starts_at": now.Add(-time.Minute), "ends_at": now.Add(time.Hour),
	}, http.StatusCreated)
	id, _ := a.Body["id"].(float64)
	require.NotZero(d.t, id)
	return uint64(id)
}

func (d *deployment) audit(sku uint64) (sale.Report, error) {
	a := d.call(d.live().URL(), "GET", fmt.Sprintf("/admin/skus/%d/audit", sku), "", nil)
	var r sale.Report
	if a.Err != nil {
		return r, a.Err
	}
	if a.Status != http.StatusOK {
		return r, fmt.Errorf("audit: %d %s", a.Status, a.Raw)
	}
	return r, json.Unmarshal([]byte(a.Raw), &r)
}

// drained waits until no order of sku is queued and the audit is clean,
// and returns the audit.
func (d *deployment) drained(sku uint64, limit time.Duration) sale.Report {
	d.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		r, err := d.audit(sku)
		if err == nil && r.QueuedOrders == 0 && r.Consistent {
			return r
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("sku %d not drained in %s: %+v %v", sku, limit, r, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// queueLen returns the orders of sku in flight and pending (payment
// deadlines, which share the queue, are not counted).
func (d *deployment) queueLen(sku uint64) (inflight, pending int64) {
	return int64(len(d.inflightIDs(sku))), int64(len(d.pendingIDs(sku)))
}

// inflightTasks lists the order tasks of sku in flight.
func (d *deployment) inflightTasks(sku uint64) []string {
	return d.orderTasks(sku, "inflight")
}

// inflightIDs lists the orders of sku in flight.
func (d *deployment) inflightIDs(sku uint64) []string {
	return d.ordersOf(sku, d.orderTasks(sku, "inflight"))
}

// pendingIDs lists the orders of sku waiting in its queue.
func (d *deployment) pendingIDs(sku uint64) []string {
	return d.ordersOf(sku, d.orderTasks(sku, "ready"))
}

// orderTasks lists the order tasks in one of sku's queue sets (payment
// deadlines, which share the queue, left out).
func (d *deployment) orderTasks(sku uint64, set string) []string {
	ids, _ := d.rdb.ZRange(context.Background(), d.prefix+stock.Tag(sku)+":q:"+set, 0, -1).Result()
	out := ids[:0]
	for _, id := range ids {
		if !strings.HasPrefix(id, "exp:") {
			out = append(out, id)
		}
	}
	return out
}

// ordersOf lists the ids of the orders in sku's order tasks.
func (d *deployment) ordersOf(sku uint64, tasks []string) []string {
	var out []string
	for _, id := range tasks {
		payload, _ := d.rdb.HGet(context.Background(), d.prefix+stock.Tag(sku)+":q:data", id).Bytes()
		orders, _ := stock.DecodeOrders(payload)
		for _, o := range orders {
			out = append(out, o.OrderID)
		}
	}
	return out
}

// verify runs `seckill verify --sku sku` against the deployment and
// requires exit status 0.
func (d *deployment) verify(sku uint64) {
	d.t.Helper()
	cmd := exec.Command(seckillBin, "verify", "--sku", fmt.Sprint(sku))
	for k, v := range d.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "SECKILL_LOG_LEVEL=warn")
	out, err := cmd.CombinedOutput()
	require.NoError(d.t, err, "seckill verify --sku %d:\n%s", sku, out)
}

// shopper is the outcome of one shopper's purchase.
type shopper struct {
	User     string
	answer          // the last answer (a retry on another instance after a transport error)
	Attempts int    // requests sent
	Order    string // order id of a 202
}

// crowd is a sale in progress: shoppers arriving at a steady rate, each
// buying one unit once from the next instance, and trying the following
// instance when theirs does not answer (as a load balancer would).
type crowd struct {
	d        *deployment
	sku      uint64
	accepted atomic.Int64
	answered atomic.Int64
	done     chan struct{}

	mu       sync.Mutex
	shoppers []shopper
}

// buy starts n shoppers (users "<tag>-0" ...) arriving at rate per second
// against the API processes; Wait returns their outcomes.
func (d *deployment) buy(sku uint64, tag string, n, rate int) *crowd {
	return d.arrive(sku, tag, n, rate, (*crowd).shop)
}

// arrive starts n shoppers (users "<tag>-0" ...) arriving at rate per
// second, each buying sku through shop.
func (d *deployment) arrive(sku uint64, tag string, n, rate int, shop func(c *crowd, i int, user string)) *crowd {
	c := &crowd{d: d, sku: sku, done: make(chan struct{}), shoppers: make([]shopper, n)}
	go func() {
		defer close(c.done)
		var wg sync.WaitGroup
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for i := range n {
			<-tick.C
			wg.Go(func() { shop(c, i, fmt.Sprintf("%s-%d", tag, i)) })
		}
		wg.Wait()
	}()
	return c
}

func (c *crowd) shop(i int, user string) {
	s := shopper{User: user}
	n := len(c.d.api)
	for try := range n {
		p := c.d.api[(i+try)%n]
		s.Attempts++
		s.answer = c.d.call(p.URL(), "POST", "/api/v1/orders", user, map[string]any{"sku_id": c.sku, "qty": 1})
		if s.Err == nil {
			break
		}
	}
	c.record(i, s)
}

// record keeps shopper i's outcome and counts its answer.
func (c *crowd) record(i int, s shopper) {
	if s.Err == nil {
		c.answered.Add(1)
	}
	if s.Status == http.StatusAccepted {
		s.Order = s.Str("order_id")
		c.accepted.Add(1)
	}
	c.mu.Lock()
	c.shoppers[i] = s
	c.mu.Unlock()
}

// Wait waits for every shopper and returns the outcomes.
func (c *crowd) Wait() []shopper {
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.shoppers
}

// waitAccepted waits until at least n orders were accepted.
func (c *crowd) waitAccepted(n int64) {
	c.d.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for c.accepted.Load() < n {
		if time.Now().After(deadline) {
			c.d.t.Fatalf("only %d of %d orders accepted in 30s", c.accepted.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// tally counts outcomes by status and error code, e.g. "202", "409 sold_out",
// "transport error".
func tally(ss []shopper) map[string]int {
	m := map[string]int{}
	for _, s := range ss {
		switch {
		case s.Err != nil:
			m["no answer"]++
		case s.Status == http.StatusAccepted:
			m["202"]++
		default:
			m[fmt.Sprintf("%d %s", s.Status, s.Str("error"))]++
		}
	}
	return m
}

func accepted(ss []shopper) map[string]string {
	m := map[string]string{}
	for _, s := range ss {
		if s.Order != "" {
			m[s.Order] = s.User
		}
	}
	return m
}

// leak matches what an error body must never show a shopper.
var leak = regexp.MustCompile(`(?i)redis|mysql|sql|dial|tcp|127\.0\.0\.1|refused|timeout|goroutine|panic|\.go:|i/o`)

// checkErrorBodies fails the test on a 500, or on a 5xx whose body is not
// the stable {"error","detail"} or names internals.
func checkErrorBodies(t *testing.T, ss []shopper) {
	t.Helper()
	for _, s := range ss {
		if s.Err != nil || s.Status < 500 {
			continue
		}
		assert.NotEqual(t, http.StatusInternalServerError, s.Status, "%s: %s", s.User, s.Raw)
		assert.NotEmpty(t, s.Str("error"), "%s: error code in %s", s.User, s.Raw)
		// A buy of unknown outcome also names the request id to retry with;
		// a store that refused before anything was written does not.
		want := 2
		if _, ok := s.Body["request_id"]; ok {
			want = 3
			assert.Equal(t, "unavailable", s.Str("error"), "%s: only an unknown outcome names a request_id: %s", s.User, s.Raw)
			assert.NotEmpty(t, s.Str("request_id"), "%s: request_id in %s", s.User, s.Raw)
		}
		assert.Len(t, s.Body, want, "%s: only error, detail (and request_id) in %s", s.User, s.Raw)
		assert.NotRegexp(t, leak, s.Raw, "%s: internals in a %d body", s.User, s.Status)
	}
}

// sqlState is what MySQL holds for a SKU.
type sqlState struct {
	stockTotal, sold int64
	status           map[string]string // order id -> status
	users            map[string]string // order id -> user
	duplicates       int64
	active           int64 // units of pending_payment and paid orders
}

func (d *deployment) sqlState(sku uint64) sqlState {
	d.t.Helper()
	ctx := context.Background()
	s := sqlState{status: map[string]string{}, users: map[string]string{}}
	require.NoError(d.t, d.db.QueryRowContext(ctx, "SELECT stock_total, sold FROM skus WHERE id = ?", sku).Scan(&s.stockTotal, &s.sold))
	rows, err := d.db.QueryContext(ctx, "SELECT order_id, user_id, status, qty FROM orders WHERE sku_id = ?", sku)
	require.NoError(d.t, err)
	defer rows.Close()
	for rows.Next() {
		var id, user, status string
		var qty int64
		require.NoError(d.t, rows.Scan(&id, &user, &status, &qty))
		if _, dup := s.status[id]; dup {
			s.duplicates++
		}
		s.status[id], s.users[id] = status, user
		if status == order.StatusPendingPayment || status == order.StatusPaid {
			s.active += qty
		}
	}
	require.NoError(d.t, rows.Err())
	return s
}

// figures are one scenario's results, logged in one parseable line.
type figures struct {
	scenario  string
	accepted  int // 202 answers
	persisted int // of those, rows in MySQL (pending_payment or paid)
	refused   int // of those, rows refused by the stock guard (failed)
	lost      int // of those, in neither (Redis lost them)
	recovered int // tasks taken over after a crash, a stall or a shutdown
	extra     int // orders in MySQL whose shopper got no 202 (the answer was lost)
	recoverMS int64
	more      []string // further key=value pairs
}

func (f figures) log(t *testing.T) {
	t.Helper()
	line := fmt.Sprintf("FAULT scenario=%s accepted=%d persisted=%d refused=%d lost=%d recovered=%d unacknowledged=%d recover_ms=%d",
		f.scenario, f.accepted, f.persisted, f.refused, f.lost, f.recovered, f.extra, f.recoverMS)
	if len(f.more) > 0 {
		line += " " + strings.Join(f.more, " ")
	}
	t.Log(line)
}

// checkOrders checks the promises for sku after the drain: every accepted
// order is in MySQL once with its shopper, as an order or refused by the
// guard (unless lostOK, for orders Redis lost), no order id twice, sold
// within stock_total and equal to the active units. It fills the counts
// of f and returns the accepted orders missing from MySQL.
func (d *deployment) checkOrders(sku uint64, acc map[string]string, lostOK bool, f *figures) []string {
	t := d.t
	t.Helper()
	s := d.sqlState(sku)
	assert.LessOrEqual(t, s.sold, s.stockTotal, "sold within stock_total")
	assert.Equal(t, s.active, s.sold, "sold counts each active order once")
	assert.Zero(t, s.duplicates, "no order id twice")
	f.accepted = len(acc)
	var missing []string
	for id, user := range acc {
		st, ok := s.status[id]
		switch {
		case !ok:
			missing = append(missing, id)
		case st == order.StatusFailed:
			f.refused++
		default:
			f.persisted++
		}
		if ok {
			assert.Equal(t, user, s.users[id], "order %s belongs to its shopper", id)
		}
	}
	for id := range s.status {
		if _, ok := acc[id]; !ok {
			f.extra++
		}
	}
	f.lost = len(missing)
	sort.Strings(missing)
	if !lostOK {
		assert.Empty(t, missing, "every 202 is in MySQL")
	}
	return missing
}

// holdSKURow locks sku's row from a transaction of the test: a drain batch
// that reaches its guarded UPDATE waits there, in the middle of its
// transaction, until release is called. Buyers are not held up (the buy
// path reads the row without locking it).
func (d *deployment) holdSKURow(sku uint64) (release func()) {
	d.t.Helper()
	tx, err := d.db.BeginTx(context.Background(), nil)
	require.NoError(d.t, err)
	var id uint64
	require.NoError(d.t, tx.QueryRow("SELECT id FROM skus WHERE id = ? FOR UPDATE", sku).Scan(&id))
	var once sync.Once
	release = func() { once.Do(func() { _ = tx.Rollback() }) }
	d.t.Cleanup(release)
	return release
}

// waitBlockedBatch waits until a drain batch of sku is claimed and its
// transaction waits for the row held by holdSKURow.
func (d *deployment) waitBlockedBatch(sku uint64) {
	d.t.Helper()
	var schema string
	require.NoError(d.t, d.db.QueryRow("SELECT DATABASE()").Scan(&schema))
	deadline := time.Now().Add(20 * time.Second)
	for {
		var waiting int
		err := d.db.QueryRow(`SELECT COUNT(*) FROM information_schema.PROCESSLIST
			WHERE DB = ? AND INFO LIKE 'UPDATE skus SET sold = sold +%'`, schema).Scan(&waiting)
		require.NoError(d.t, err)
		if in, _ := d.queueLen(sku); in > 0 && waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("no drain batch of sku %d got to its UPDATE in 20s", sku)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// notPersisted counts the orders of ids not in MySQL.
func (d *deployment) notPersisted(ids []string) int {
	d.t.Helper()
	missing := 0
	for _, id := range ids {
		var n int
		require.NoError(d.t, d.db.QueryRow("SELECT COUNT(*) FROM orders WHERE order_id = ?", id).Scan(&n))
		if n == 0 {
			missing++
		}
	}
	return missing
}

// waitPersisted waits until every order of ids is in MySQL and returns how
// long that took.
func (d *deployment) waitPersisted(ids []string, limit time.Duration) time.Duration {
	d.t.Helper()
	start := time.Now()
	for {
		missing := d.notPersisted(ids)
		if missing == 0 {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			d.t.Fatalf("%d of %d orders not in MySQL after %s", missing, len(ids), limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metric sums the samples of a Prometheus counter of the process at base.
func (d *deployment) metric(p *proc, name string) float64 {
	a := d.call(p.URL(), "GET", "/metrics", "", nil)
	if a.Err != nil {
		return 0
	}
	var sum float64
	for _, line := range strings.Split(a.Raw, "\n") {
		if !strings.HasPrefix(line, name) || strings.HasPrefix(line, "#") {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		var v float64
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			_, _ = fmt.Sscan(line[i+1:], &v)
		}
		sum += v
	}
	return sum
}

// retried counts the shoppers whose first instance did not answer.
func retried(ss []shopper) int {
	n := 0
	for _, s := range ss {
		if s.Attempts > 1 {
			n++
		}
	}
	return n
}

// during returns the shoppers whose last request was sent between from and to.
func during(ss []shopper, from, to time.Time) []shopper {
	var out []shopper
	for _, s := range ss {
		if !s.Start.Before(from) && s.Start.Before(to) {
			out = append(out, s)
		}
	}
	return out
}
