package chaostest

import (
	"context"
	"math/rand"
	"time"
)

// Fault kinds.
const (
	faultProcKill     = "seckill-kill"  // kill -9 a seckill process, start it again
	faultProcStop     = "seckill-stop"  // SIGSTOP a seckill process, then SIGCONT
	faultDrainHeld    = "drain-held"    // the SKU rows locked in MySQL: drain batches wait inside their transactions
	faultDeadLetters  = "dead-letters"  // the drain held, then a process holding batches killed or stopped past their lease: dead letters
	faultRedisFreeze  = "redis-freeze"  // standalone: SIGSTOP redis-server past the read timeout, then SIGCONT
	faultRedisFlush   = "redis-flush"   // standalone: FLUSHALL, every key gone at once
	faultRedisRestart = "redis-restart" // standalone: kill -9 redis-server, start it again empty

	faultMasterFreeze = "master-freeze" // Cluster: SIGSTOP a master past the read timeout
	faultMasterKill   = "master-kill"   // Cluster: kill -9 a master; its replica takes over; the old one rejoins as a replica

	faultPrimaryFreeze    = "primary-freeze"    // Sentinel: SIGSTOP the primary past the read timeout
	faultPrimaryKill      = "primary-kill"      // Sentinel: kill -9 the primary; a replica is promoted; the old one rejoins as a replica
	faultSentinelFailover = "sentinel-failover" // Sentinel: SENTINEL FAILOVER
)

// late are the kinds that cut a phase's linearizability check (a data
// loss or a failover): at most one per phase, in some phases, after 60% of
// the phase.
var late = map[string]bool{
	faultRedisFlush: true, faultRedisRestart: true,
	faultMasterKill: true, faultPrimaryKill: true, faultSentinelFailover: true,
}

// weight is how often a kind is drawn among those that may come now.
var weight = map[string]int{
	faultRedisFreeze: 3, faultMasterFreeze: 3, faultPrimaryFreeze: 3,
	faultProcKill: 3, faultProcStop: 3, faultDrainHeld: 2, faultDeadLetters: 2,
}

// inject injects faults one after another until stop is closed, and undoes
// the last one (continues what is stopped, starts what is killed) before it
// returns. Faults that lose data or fail Redis over come at most once per
// phase, in about half of the phases (two in three for a failover) and
// not before 60% of the phase's length: the linearizability check stops
// there, so most of every phase is checked. A kind the run has not
// injected yet is preferred, so that a short run sees every kind of its
// lane. It reports whether Redis lost its data and whether it failed over.
func (l *lane) inject(phase int, length time.Duration, rng *rand.Rand, stop <-chan struct{}) (lost, failedOver bool) {
	var lates []string
	for _, k := range l.spec.faults {
		if late[k] {
			lates = append(lates, k)
		}
	}
	allowLate := rng.Intn(2) == 0
	if l.spec.waitReplicas > 0 {
		// Until each failover kind has come once, in every phase.
		allowLate = l.never(lates) != "" || rng.Intn(3) != 0
	}
	lateFrom := time.Now().Add(length * 6 / 10)
	lateDone := false
	sleep(time.Duration(300+rng.Intn(1200))*time.Millisecond, stop)
	for !stopped(stop) {
		var now, later []string
		for _, k := range l.spec.faults {
			if late[k] {
				if allowLate && !lateDone && time.Now().After(lateFrom) {
					later = append(later, k)
				}
				continue
			}
			now = append(now, k)
		}
		var kind string
		if len(later) > 0 && (rng.Intn(4) == 0 || (l.never(later) != "" && rng.Intn(2) == 0)) {
			kind = l.fresh(rng, later)
		} else if k := l.never(now); k != "" && rng.Intn(2) == 0 {
			kind = k
		} else {
			kind = weighted(rng, now)
		}
		f := l.injectOne(phase, kind, rng, stop)
		if late[kind] {
			lateDone = true
		}
		if f.kind != "" {
			l.injected[f.kind]++
			l.hist.addFault(f)
			lost = lost || f.dataLoss
			failedOver = failedOver || f.failover
		}
		sleep(time.Duration(700+rng.Intn(1800))*time.Millisecond, stop)
	}
	return lost, failedOver
}

// fresh picks one of kinds: one the run has not injected yet if there is
// one, otherwise any.
func (l *lane) fresh(rng *rand.Rand, kinds []string) string {
	if k := l.never(kinds); k != "" {
		return k
	}
	return kinds[rng.Intn(len(kinds))]
}

// never is the first of kinds the run has not injected yet, "" if none.
func (l *lane) never(kinds []string) string {
	for _, k := range kinds {
		if l.injected[k] == 0 {
			return k
		}
	}
	return ""
}

func weighted(rng *rand.Rand, kinds []string) string {
	sum := 0
	for _, k := range kinds {
		sum += max(weight[k], 1)
	}
	r := rng.Intn(sum)
	for _, k := range kinds {
		if r -= max(weight[k], 1); r < 0 {
			return k
		}
	}
	return kinds[len(kinds)-1]
}

// injectOne injects one fault of kind and returns it (kind "" when none
// could be injected).
func (l *lane) injectOne(phase int, kind string, rng *rand.Rand, stop <-chan struct{}) fault {
	switch kind {
	case faultProcKill:
		return l.killProc(rng, stop)
	case faultProcStop:
		return l.stopProc(rng, stop)
	case faultDrainHeld:
		l.topUp(phase, rng)
		release, held := l.holdDrain()
		sleep(time.Duration(500+rng.Intn(2000))*time.Millisecond, stop)
		release()
		held.to = time.Now()
		return held
	case faultDeadLetters:
		return l.makeDeadLetters(phase, rng, stop)
	case faultRedisFreeze:
		return l.freezeRedis(rng, stop)
	case faultRedisFlush, faultRedisRestart:
		// Half of the data losses come while the drain is held, so that
		// Redis holds accepted orders not yet in MySQL when it loses them,
		// and workers hold claimed batches across it.
		var release func()
		var held fault
		if rng.Intn(2) == 0 {
			l.topUp(phase, rng)
			release, held = l.holdDrain()
			sleep(time.Duration(300+rng.Intn(900))*time.Millisecond, stop)
		}
		var f fault
		if kind == faultRedisFlush {
			f = l.flushRedis()
		} else {
			f = l.restartRedis(rng, stop)
		}
		if release != nil {
			sleep(time.Duration(200+rng.Intn(800))*time.Millisecond, stop)
			release()
			held.to = time.Now()
			l.hist.addFault(held)
			f.note = "with the drain held"
		}
		return f
	case faultMasterFreeze:
		return l.freezeMaster(rng, stop)
	case faultMasterKill:
		return l.killMaster(rng)
	case faultPrimaryFreeze:
		return l.freezePrimary(rng, stop)
	case faultPrimaryKill:
		return l.killPrimary()
	case faultSentinelFailover:
		return l.sentinelFailover()
	}
	return fault{}
}

// freezeRedis stops redis-server for 0.4 to 1.5s: longer than the servers'
// read timeout (300ms), so their calls time out while the commands they
// sent may still run when it goes on.
func (l *lane) freezeRedis(rng *rand.Rand, stop <-chan struct{}) fault {
	f := fault{kind: faultRedisFreeze, target: "redis", from: time.Now()}
	l.redis.Freeze()
	sleep(time.Duration(400+rng.Intn(1100))*time.Millisecond, stop)
	l.redis.Thaw()
	f.to = time.Now()
	return f
}

// flushRedis deletes every key of the private Redis: orders accepted and not
// yet drained, request ids, payment deadlines, locks — all gone at once.
func (l *lane) flushRedis() fault {
	committed := l.committed()
	f := fault{kind: faultRedisFlush, target: "redis", from: time.Now(), dataLoss: true, committed: committed}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	err := l.rdb.FlushAll(ctx).Err()
	cancel()
	f.to = time.Now()
	if err != nil {
		f.note = "error: " + err.Error() // counted as a loss all the same: it may have run
	}
	return f
}

// restartRedis kills redis-server (no persistence) and starts it again,
// empty, after 0.2 to 1s.
func (l *lane) restartRedis(rng *rand.Rand, stop <-chan struct{}) fault {
	committed := l.committed()
	f := fault{kind: faultRedisRestart, target: "redis", from: time.Now(), dataLoss: true, committed: committed}
	l.redis.Kill()
	sleep(time.Duration(200+rng.Intn(800))*time.Millisecond, stop)
	l.redis.Start()
	f.to = time.Now()
	return f
}

// victim picks a running seckill process to fault, keeping at least one
// other running.
func (l *lane) victim(rng *rand.Rand) *proc {
	up := l.live()
	if len(up) < 2 {
		return nil
	}
	return up[rng.Intn(len(up))]
}

// killProc kills a seckill process with SIGKILL (its API requests and its
// claimed batches die with it) and starts it again 0.2 to 1.5s later.
func (l *lane) killProc(rng *rand.Rand, stop <-chan struct{}) fault {
	return l.procFault(rng, faultProcKill, func(p *proc) {
		p.kill()
		sleep(time.Duration(200+rng.Intn(1300))*time.Millisecond, stop)
		l.restart(p)
	})
}

func (l *lane) restart(p *proc) {
	if err := p.Start(60 * time.Second); err != nil {
		l.viol.add("restart", "%s did not come back after kill -9: %v", p.Name, err)
	}
}

// stopProc freezes a seckill process for 0.3 to 2s: its requests wait, its
// leases run out, its sold-out flags go stale.
func (l *lane) stopProc(rng *rand.Rand, stop <-chan struct{}) fault {
	return l.procFault(rng, faultProcStop, func(p *proc) {
		p.stop()
		sleep(time.Duration(300+rng.Intn(1700))*time.Millisecond, stop)
		p.cont()
	})
}

// procFault applies do to a random victim process and returns it as a
// fault of kind, from just before do to its end; no fault when no process
// may be the victim.
func (l *lane) procFault(rng *rand.Rand, kind string, do func(p *proc)) fault {
	p := l.victim(rng)
	if p == nil {
		return fault{}
	}
	f := fault{kind: kind, target: p.Name, from: time.Now()}
	do(p)
	f.to = time.Now()
	return f
}

// makeDeadLetters makes dead letters the way a deployment gets them: the
// drain is held right after a top-up, so that workers of every process
// claim batches and wait inside their transactions; then one process is
// killed -9 (its transactions roll back) or stopped (its transaction
// goes on, and commits, when it continues) for longer than the lease. With
// order.max_attempts 1 the batches it held become dead letters when the
// lease runs out; a stopped process writes its batch to MySQL late, after
// the batch was dead-lettered.
func (l *lane) makeDeadLetters(phase int, rng *rand.Rand, stop <-chan struct{}) fault {
	l.topUp(phase, rng)
	release, _ := l.holdDrain()
	sleep(time.Duration(600+rng.Intn(500))*time.Millisecond, stop)
	p := l.victim(rng)
	if p == nil {
		release()
		return fault{}
	}
	f := fault{kind: faultDeadLetters, target: p.Name, from: time.Now()}
	past := time.Duration(2600+rng.Intn(700)) * time.Millisecond // lease 2s, then a sweep
	if rng.Intn(2) == 0 {
		f.note = "killed"
		p.kill()
		sleep(time.Duration(300+rng.Intn(1000))*time.Millisecond, stop)
		l.restart(p)
		if d := time.Until(f.from.Add(past)); d > 0 {
			sleep(d, stop)
		}
		release()
	} else {
		f.note = "stopped"
		p.stop()
		sleep(past, stop)
		release()
		sleep(time.Duration(200+rng.Intn(600))*time.Millisecond, stop)
		p.cont()
	}
	f.to = time.Now()
	return f
}

// topUp adds 8 to 20 units to a random SKU, as the admin would, so that
// orders are taken while the drain is held (the SKUs are sold out most of
// the time, and while the drain is held no cancel or expiry gives units
// back): more than the workers can claim (two per process), so that some
// wait in Redis.
func (l *lane) topUp(phase int, rng *rand.Rand) {
	sku := l.skus[rng.Intn(len(l.skus))]
	sku.mu.Lock()
	cur := sku.total
	sku.mu.Unlock()
	l.setStock(phase, rng, sku, min(cur+8+int64(rng.Intn(13)), 100), opSetStock, 10)
}

// holdDrain locks every SKU row in MySQL from a transaction of the test: a
// drain batch that reaches its guarded UPDATE of sold waits there with its
// orders inserted but not committed, and later orders wait in Redis. Buyers
// are not held up (the buy path reads the rows without locking them);
// cancels, expiries and stock changes wait too. release rolls back.
func (l *lane) holdDrain() (release func(), f fault) {
	f = fault{kind: faultDrainHeld, target: "mysql skus rows", from: time.Now()}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		cancel()
		return func() {}, fault{}
	}
	rows, err := tx.QueryContext(ctx, "SELECT id FROM skus FOR UPDATE")
	if err == nil {
		rows.Close()
	}
	held, locked := err == nil, time.Now()
	return func() {
		// The rows are held until the rollback is sent, at the earliest.
		if held {
			l.holdMu.Lock()
			l.holds = append(l.holds, span{locked, time.Now()})
			l.holdMu.Unlock()
		}
		_ = tx.Rollback()
		cancel()
	}, f
}

// committed reads the ids of the orders in MySQL, just before a data loss.
// (Their persisted_at is when their batch began, not when it committed: a
// batch held across the loss began before it.) A failed read leaves it
// empty, which counts every order as only in Redis: more is excused, and
// listed as such.
func (l *lane) committed() map[string]bool {
	out := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := l.db.QueryContext(ctx, "SELECT order_id FROM orders")
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if rows.Scan(&id) == nil {
			out[id] = true
		}
	}
	return out
}
