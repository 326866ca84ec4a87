package chaostest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/internal/stock"
)

// snapshot is what MySQL held at a barrier, when the sale was at rest.
type snapshot struct {
	n        int
	at, end  time.Time // the read began at at; the next phase began after end
	skus     map[uint64]skuRow
	orders   map[string]*orderRow
	repaired bool // the barrier found a violation and reconciled to go on
}

type skuRow struct{ total, sold int64 }

// orderRow is a row of table orders.
type orderRow struct {
	id        string
	sku       uint64
	user, rid string
	qty       int
	status    string
	created   time.Time
	persisted time.Time
	closed    time.Time // zero while open
}

func (o *orderRow) active() bool { return o.status == "pending_payment" || o.status == "paid" }

// report is the answer of GET /admin/skus/{id}/audit.
type report struct {
	SKU            uint64   `json:"sku_id"`
	StockTotal     int64    `json:"stock_total"`
	Sold           int64    `json:"sold"`
	RedisLeft      *int64   `json:"redis_left"`
	Queued         int64    `json:"queued"`
	QueuedOrders   int64    `json:"queued_orders"`
	ActiveUnits    int64    `json:"active_units"`
	DeadLetters    int64    `json:"dead_letters"`
	Duplicates     int64    `json:"duplicates"`
	OverLimitUsers int64    `json:"over_limit_users"`
	InFlight       int64    `json:"in_flight"`
	Consistent     bool     `json:"consistent"`
	Violations     []string `json:"violations"`
}

func (r report) String() string {
	left := "null"
	if r.RedisLeft != nil {
		left = fmt.Sprint(*r.RedisLeft)
	}
	return fmt.Sprintf("sku %d: stock_total=%d sold=%d redis_left=%s in_flight=%d queued=%d active=%d dead=%d consistent=%v %v",
		r.SKU, r.StockTotal, r.Sold, left, r.InFlight, r.Queued, r.ActiveUnits, r.DeadLetters, r.Consistent, r.Violations)
}

// adminCall sends an admin request, not recorded in the history, to a live
// process.
func (l *lane) adminCall(method, path string) *op {
	live := l.live()
	base := l.procs[0].URL()
	if len(live) > 0 {
		base = live[0].URL()
	}
	o := &op{kind: "admin"}
	l.cl.do(o, base, method, path, nil)
	return o
}

func (l *lane) audit(sku uint64) (report, error) {
	var r report
	o := l.adminCall("GET", fmt.Sprintf("/admin/skus/%d/audit", sku))
	if !o.answered() {
		return r, fmt.Errorf("audit: %s", o.err)
	}
	if o.status != http.StatusOK {
		return r, fmt.Errorf("audit: %d %s", o.status, o.raw)
	}
	return r, json.Unmarshal([]byte(o.raw), &r)
}

// barrier brings the sale to rest between two phases and checks it there:
// every fault undone, the requests still in the servers settled, the
// clients' unanswered cancels and stock changes sent until answered, a
// failed reconcile sent until it succeeds, the
// dead letters deleted or requeued, the queues drained, the SKUs
// reconciled if Redis lost its data, then the audit (after a failover or
// a move that never landed, reconciled first when what it finds is an
// undersell docs/design/guarantees.md allows) and `seckill verify`; last, MySQL is read
// for the next phase's starting state.
// barrierTries is how often a barrier sends an unanswered cancel, stock
// change or reconcile again, 0.1 to 0.3s apart: past the 30s pause a
// rebuild stopped part-way (its process killed, or its Redis failed over)
// leaves on a SKU, which answers busy until the pause expires
// (docs/design/buckets.md).
const barrierTries = 200

func (l *lane) barrier(n int, lost, failedOver bool) {
	began := time.Now()
	for _, p := range l.procs {
		p.cont()
		if !p.Running() {
			if err := p.Start(60 * time.Second); err != nil {
				l.viol.add("restart", "barrier %d: %v", n, err)
			}
		}
	}
	l.settle(n)
	rng := rand.New(rand.NewSource(l.rng.Int63()))
	for _, u := range l.users.users {
		for len(u.unsettled) > 0 {
			if !l.cancel(n, rng, u, u.unsettled[0], barrierTries) {
				l.viol.add("barrier", "barrier %d: cancel of %s got no answer in %d tries", n, u.unsettled[0].id, barrierTries)
				u.unsettled = u.unsettled[1:]
			}
		}
	}
	for _, sku := range l.skus {
		if sku.pendingTotal != 0 && !l.setStock(n, rng, sku, sku.pendingTotal, sku.pendingKind, barrierTries) {
			l.viol.addSKU(sku.id, "barrier", "barrier %d: stock change of sku %d got no answer in %d tries", n, sku.id, barrierTries)
		}
	}
	// A batch held by a process killed or stopped just before the barrier
	// becomes a dead letter while the queues drain: clear, drain, clear.
	l.clearDead(n, rng)
	l.drain(n, rng)
	for _, sku := range l.skus {
		if sku.pendingReconcile {
			l.reconcile(n, sku.id, barrierTries)
			sku.pendingReconcile = false
		}
	}
	if lost {
		l.waitSQLStill(2500*time.Millisecond, 30*time.Second)
		for _, sku := range l.skus {
			l.reconcile(n, sku.id, barrierTries)
		}
	}
	// The sold-out flags of the last phase have lapsed before the next one.
	if d := 2*time.Second - time.Since(began); d > 0 {
		time.Sleep(d)
	}
	repaired := false
	var since time.Time // the last barrier's snapshot
	if len(l.snaps) > 0 {
		since = l.snaps[len(l.snaps)-1].at
	}
	live := l.replacedLive(since)
	for _, sku := range l.skus {
		repaired = l.checkRest(n, sku, failedOver, live) || repaired
	}
	if out, err := l.verify(); err != nil {
		l.viol.add("verify", "barrier %d: seckill verify: %v\n%s", n, err, out)
	}
	snap := l.takeSnapshot(n)
	snap.repaired = repaired
	l.snaps = append(l.snaps, snap)
	l.logf("barrier %d at %s took %s", n, clock(snap.at), time.Since(began).Round(time.Millisecond))
}

// checkRest audits sku at rest. A SKU that does not add up is reconciled,
// as an operator would, and the audit read again; it is a violation unless
// docs/design/guarantees.md allows what the audit found: units of a move between buckets
// that never landed (in_flight, exactly the moves still unsettled in
// Redis), or units a failover took off sale (returns the old primary had
// not replicated: redis_left too low, never too high). It reports whether
// the SKU had to be repaired after a violation. After the replacement of a
// live primary (live) Redis may have more units left than MySQL says too:
// the old primary's last sales are gone
// (docs/design/guarantees.md#across-a-failover-rediswait_replicas).
func (l *lane) checkRest(n int, sku *skuInfo, failedOver, live bool) (repaired bool) {
	r, ok := l.waitConsistent(sku.id, 3*time.Second)
	if ok {
		return false
	}
	stuck, err := l.unsettledMoves(sku)
	excuse := ""
	if r.RedisLeft != nil && err == nil {
		sum := *r.RedisLeft + r.InFlight + r.Queued + r.ActiveUnits
		onlyMoves := r.InFlight == stuck && sum == r.StockTotal
		undersold := failedOver && r.InFlight == stuck && sum < r.StockTotal
		switch {
		case r.InFlight > 0 && onlyMoves:
			excuse = fmt.Sprintf("barrier %d: sku %d: %d units of moves between buckets that never landed", n, sku.id, stuck)
		case undersold:
			excuse = fmt.Sprintf("barrier %d: sku %d: %d units taken off sale by a failover (%d in moves that never landed)", n, sku.id, r.StockTotal-sum, stuck)
		case live:
			excuse = fmt.Sprintf("barrier %d: sku %d: Redis counts %d units against MySQL's %d after a live primary was replaced", n, sku.id, sum, r.StockTotal)
		}
	}
	if excuse != "" && len(r.Violations) > 0 && r.DeadLetters == 0 && r.Duplicates == 0 && r.OverLimitUsers == 0 && r.Sold == r.ActiveUnits {
		l.repairs = append(l.repairs, excuse)
		l.reconcile(n, sku.id, barrierTries)
		if r2, ok := l.waitConsistent(sku.id, 20*time.Second); !ok {
			l.viol.addSKU(sku.id, "audit", "barrier %d: audit not consistent after a reconcile: %s (before: %s)", n, r2, r)
			return true
		}
		return false
	}
	r, ok = l.waitConsistent(sku.id, 17*time.Second)
	if ok {
		return false
	}
	l.viol.addSKU(sku.id, "audit", "barrier %d: audit not consistent after 20s: %s (unsettled moves in redis: %d units, %v)", n, r, stuck, err)
	l.reconcile(n, sku.id, barrierTries)
	return true
}

// replacedLive reports whether a live Sentinel primary was replaced since
// since (fault.live).
func (l *lane) replacedLive(since time.Time) bool {
	_, faults := l.hist.snapshot()
	for _, f := range faults {
		if f.live && f.from.After(since) {
			return true
		}
	}
	return false
}

// unsettledMoves adds up the units of sku's moves between buckets that were
// lent and not received: the entries of every bucket's lent hash whose
// receiver's received set does not have them.
func (l *lane) unsettledMoves(sku *skuInfo) (int64, error) {
	if sku.buckets <= 1 {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var units int64
	for _, p := range stock.Parts(sku.id, sku.buckets) {
		lent, err := l.rdb.HGetAll(ctx, l.prefix+p.Tag()+":lent").Result()
		if err != nil {
			return 0, err
		}
		for id, v := range lent {
			n, to, ok := parseLent(v)
			if !ok {
				continue
			}
			got, err := l.rdb.SIsMember(ctx, l.prefix+stock.Part{SKU: sku.id, Bucket: to}.Tag()+":received", id).Result()
			if err != nil {
				return 0, err
			}
			if !got {
				units += n
			}
		}
	}
	return units, nil
}

// parseLent reads a lent hash's value, "units:bucket:epoch".
func parseLent(v string) (units int64, to int, ok bool) {
	parts := strings.SplitN(v, ":", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	u, err1 := strconv.ParseInt(parts[0], 10, 64)
	b, err2 := strconv.Atoi(parts[1])
	return u, b, err1 == nil && err2 == nil
}

// settle waits until every request of the history that got no answer can
// no longer take effect: its process was killed after it was sent, or has
// run for 6s since (the buy path gives up on a request 5.1s after taking
// it, stock.lock_wait plus 5s).
func (l *lane) settle(n int) {
	ops, _ := l.hist.snapshot()
	var until time.Time
	for _, o := range ops {
		if o.answered() || o.phase != n {
			continue
		}
		p := l.procs[o.instance]
		if p.killedSince(o.call) {
			continue
		}
		last := o.call
		for _, s := range p.stopSpans() {
			if s.to.After(last) {
				last = s.to
			}
		}
		if d := last.Add(6 * time.Second); d.After(until) {
			until = d
		}
	}
	if d := time.Until(until); d > 0 {
		time.Sleep(d)
	}
}

// drainedFor is how long every SKU must stay drained, with no dead
// letter, before a barrier goes on: longer than a lease and a sweep
// (testutil.RecoveryEnv: 2s and 500ms), so that a batch still leased by a
// process killed or stopped just before the barrier, which the audit does
// not count as queued, has become a dead letter and been cleared.
const drainedFor = 3 * time.Second

// drain waits until every SKU's queue is empty and none has a dead letter,
// for drainedFor on end, clearing the dead letters it finds; a SKU not
// drained in 60s is a violation.
func (l *lane) drain(n int, rng *rand.Rand) {
	deadline := time.Now().Add(60 * time.Second)
	var clean time.Time // since when every SKU was drained
	for {
		left := map[uint64]string{} // the SKUs not drained, and why
		for _, sku := range l.skus {
			r, err := l.audit(sku.id)
			// A dead letter's orders are not counted as queued: a batch
			// whose lease ran out while the queue emptied is one.
			if err == nil && r.QueuedOrders == 0 && r.DeadLetters == 0 {
				continue
			}
			left[sku.id] = fmt.Sprintf("%s %v", r, err)
			if err == nil && r.DeadLetters > 0 {
				l.clearDeadOf(n, rng, sku)
			}
		}
		switch {
		case len(left) > 0:
			clean = time.Time{}
		case clean.IsZero():
			clean = time.Now()
		case time.Since(clean) >= drainedFor:
			return
		}
		if time.Now().After(deadline) {
			for id, why := range left {
				l.viol.addSKU(id, "drain", "barrier %d: sku %d not drained in 60s: %s", n, id, why)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitSQLStill waits until the number of orders in MySQL has not changed
// for still: after a data loss, workers may still hold batches they claimed
// before it, which Redis does not know about any more.
func (l *lane) waitSQLStill(still, limit time.Duration) {
	deadline := time.Now().Add(limit)
	last, since := -1, time.Now()
	for time.Now().Before(deadline) {
		var n int
		if err := l.db.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n); err == nil && n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) >= still {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// reconcile rebuilds sku's Redis state from MySQL, recorded in the history.
func (l *lane) reconcile(n int, sku uint64, tries int) {
	for try := 0; try < tries; try++ {
		o := &op{kind: opReconcile, sku: sku, phase: n, instance: 0}
		for i, p := range l.procs {
			if p.Running() {
				o.instance = i
				break
			}
		}
		l.cl.do(o, l.procs[o.instance].URL(), "POST", fmt.Sprintf("/admin/skus/%d/reconcile", sku), nil)
		l.hist.add(o)
		if o.status == http.StatusOK {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	l.viol.addSKU(sku, "reconcile", "barrier %d: reconcile of sku %d did not succeed in %d tries", n, sku, tries)
}

// waitConsistent polls the audit of sku until it is consistent.
func (l *lane) waitConsistent(sku uint64, limit time.Duration) (report, bool) {
	deadline := time.Now().Add(limit)
	for {
		r, err := l.audit(sku)
		if err == nil && r.Consistent {
			return r, true
		}
		if time.Now().After(deadline) {
			return r, false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// verify runs `seckill verify` (every SKU) against the deployment.
func (l *lane) verify() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, seckillBin, "verify")
	for k, v := range l.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "SECKILL_LOG_LEVEL=warn")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// takeSnapshot reads MySQL in one transaction and checks it against the
// audit read right after: the same active units and stock_total, and Redis
// at rest (consistent), so that no expiry was between MySQL and Redis
// during the read. It also compares Redis's buyers with MySQL's active
// orders per user.
func (l *lane) takeSnapshot(n int) *snapshot {
	for try := 0; ; try++ {
		s, err := l.readSQL(n)
		if err != nil {
			if try < 20 {
				time.Sleep(500 * time.Millisecond)
				continue
			}
			l.viol.add("snapshot", "barrier %d: read mysql: %v", n, err)
			s = &snapshot{n: n, at: time.Now(), skus: map[uint64]skuRow{}, orders: map[string]*orderRow{}}
			s.end = time.Now()
			return s
		}
		ok := true
		for _, sku := range l.skus {
			r, err := l.audit(sku.id)
			active := int64(0)
			for _, o := range s.orders {
				if o.sku == sku.id && o.active() {
					active += int64(o.qty)
				}
			}
			if err != nil || !r.Consistent || r.ActiveUnits != active || r.StockTotal != s.skus[sku.id].total {
				ok = false
				if try == 20 {
					l.viol.add("snapshot", "barrier %d: mysql and the audit disagree at rest: %s, mysql active %d total %d (%v)",
						n, r, active, s.skus[sku.id].total, err)
				}
			}
		}
		if ok || try == 20 {
			l.checkBuyers(n, s)
			s.end = time.Now()
			return s
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (l *lane) readSQL(n int) (*snapshot, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := &snapshot{n: n, at: time.Now(), skus: map[uint64]skuRow{}, orders: map[string]*orderRow{}}
	// One snapshot, as the rebuild reads it: REPEATABLE READ, not READ
	// ONLY, which TiDB refuses by default.
	tx, err := l.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, "SELECT id, stock_total, sold FROM skus")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id uint64
		var r skuRow
		if err := rows.Scan(&id, &r.total, &r.sold); err != nil {
			rows.Close()
			return nil, err
		}
		s.skus[id] = r
	}
	rows.Close()
	rows, err = tx.QueryContext(ctx, `SELECT order_id, sku_id, user_id, COALESCE(request_id, ''), qty, status,
		created_at, persisted_at, closed_at FROM orders`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	dup := map[string]int{}
	for rows.Next() {
		o := &orderRow{}
		var closed sql.NullTime
		if err := rows.Scan(&o.id, &o.sku, &o.user, &o.rid, &o.qty, &o.status, &o.created, &o.persisted, &closed); err != nil {
			return nil, err
		}
		if closed.Valid {
			o.closed = closed.Time
		}
		dup[o.id]++
		s.orders[o.id] = o
	}
	for id, k := range dup {
		if k > 1 {
			l.viol.add("duplicate", "barrier %d: order %s is %d rows in mysql", n, id, k)
		}
	}
	return s, rows.Err()
}

// checkBuyers compares every SKU's Redis buyers (user -> units held, in
// the user's home bucket) with the active orders in MySQL: at rest they are
// the same, or the per-user limit is enforced against wrong numbers.
func (l *lane) checkBuyers(n int, s *snapshot) {
	for _, sku := range l.skus {
		want := map[string]int64{}
		for _, o := range s.orders {
			if o.sku == sku.id && o.active() {
				want[o.user] += int64(o.qty)
			}
		}
		got := map[string]string{}
		var err error
		for _, p := range stock.Parts(sku.id, sku.buckets) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			var part map[string]string
			part, err = l.rdb.HGetAll(ctx, l.prefix+p.Tag()+":buyers").Result()
			cancel()
			if err != nil {
				break
			}
			for u, v := range part {
				if prev, ok := got[u]; ok {
					l.viol.addSKU(sku.id, "buyers", "barrier %d: sku %d: user %s is a buyer in two buckets (%s and %s)", n, sku.id, u, prev, v)
				}
				got[u] = v
			}
		}
		if err != nil {
			continue
		}
		var diff []string
		for u, v := range got {
			var k int64
			_, _ = fmt.Sscan(v, &k)
			if k != want[u] {
				diff = append(diff, fmt.Sprintf("%s redis %d mysql %d", u, k, want[u]))
			}
		}
		for u, k := range want {
			if _, ok := got[u]; !ok {
				diff = append(diff, fmt.Sprintf("%s redis 0 mysql %d", u, k))
			}
		}
		if len(diff) > 0 {
			sort.Strings(diff)
			l.viol.addSKU(sku.id, "buyers", "barrier %d: sku %d: redis buyers differ from active orders at rest: %s", n, sku.id, strings.Join(diff, "; "))
		}
	}
}
