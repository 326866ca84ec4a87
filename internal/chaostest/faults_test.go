package chaostest

import (
	"context"
	"math/rand"
	"time"
)

// Fault kinds.
const (
	faultRedisFreeze  = "redis-freeze"  // SIGSTOP redis-server past the read timeout, then SIGCONT
	faultRedisFlush   = "redis-flush"   // FLUSHALL: every key gone at once
	faultRedisRestart = "redis-restart" // kill -9 redis-server, start it again empty
	faultProcKill     = "seckill-kill"  // kill -9 a seckill process, start it again
	faultProcStop     = "seckill-stop"  // SIGSTOP a seckill process, then SIGCONT
	faultDrainHeld    = "drain-held"    // the SKU rows locked in MySQL: drain batches wait inside their transactions
)

// inject injects faults one after another until stop is closed, and undoes
// the last one (continues what is stopped, starts what is killed) before it
// returns. At most one data loss happens per phase, in about half of the
// phases and not before 60% of the phase's length: the linearizability
// check stops at a data loss, so most of every phase is checked. It
// reports whether Redis lost its data.
func (c *cluster) inject(phase int, length time.Duration, rng *rand.Rand, stop <-chan struct{}) (lost bool) {
	allowLoss := rng.Intn(2) == 0
	lossFrom := time.Now().Add(length * 6 / 10)
	sleep(time.Duration(300+rng.Intn(1200))*time.Millisecond, stop)
	for !stopped(stop) {
		r := rng.Intn(11)
		if allowLoss && !lost && time.Now().After(lossFrom) && rng.Intn(4) == 0 {
			r = 11 + rng.Intn(2) // a data loss
		}
		var f fault
		switch {
		case r < 3:
			f = c.freezeRedis(rng, stop)
		case r < 6:
			f = c.killProc(rng, stop)
		case r < 9:
			f = c.stopProc(rng, stop)
		case r < 11:
			c.topUp(phase, rng)
			release, held := c.holdDrain()
			sleep(time.Duration(500+rng.Intn(2000))*time.Millisecond, stop)
			release()
			f = held
			f.to = time.Now()
		default:
			// Half of the data losses come while the drain is held, so
			// that Redis holds accepted orders not yet in MySQL when it
			// loses them, and workers hold claimed batches across it.
			var release func()
			var held fault
			if rng.Intn(2) == 0 {
				c.topUp(phase, rng)
				release, held = c.holdDrain()
				sleep(time.Duration(300+rng.Intn(900))*time.Millisecond, stop)
			}
			if r == 11 {
				f = c.flushRedis()
			} else {
				f = c.restartRedis(rng, stop)
			}
			lost = true
			if release != nil {
				sleep(time.Duration(200+rng.Intn(800))*time.Millisecond, stop)
				release()
				held.to = time.Now()
				c.hist.addFault(held)
				f.note = "with the drain held"
			}
		}
		if f.kind != "" {
			c.hist.addFault(f)
		}
		sleep(time.Duration(700+rng.Intn(1800))*time.Millisecond, stop)
	}
	return lost
}

// freezeRedis stops redis-server for 0.4 to 1.5s: longer than the servers'
// read timeout (300ms), so their calls time out while the commands they
// sent may still run when it goes on.
func (c *cluster) freezeRedis(rng *rand.Rand, stop <-chan struct{}) fault {
	f := fault{kind: faultRedisFreeze, target: "redis", from: time.Now()}
	c.redis.Freeze()
	sleep(time.Duration(400+rng.Intn(1100))*time.Millisecond, stop)
	c.redis.Thaw()
	f.to = time.Now()
	return f
}

// flushRedis deletes every key of the private Redis: orders accepted and not
// yet drained, request ids, payment deadlines, locks — all gone at once.
func (c *cluster) flushRedis() fault {
	committed := c.committed()
	f := fault{kind: faultRedisFlush, target: "redis", from: time.Now(), dataLoss: true, committed: committed}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	err := c.rdb.FlushAll(ctx).Err()
	cancel()
	f.to = time.Now()
	if err != nil {
		f.note = "error: " + err.Error() // counted as a loss all the same: it may have run
	}
	return f
}

// restartRedis kills redis-server (no persistence) and starts it again,
// empty, after 0.2 to 1s.
func (c *cluster) restartRedis(rng *rand.Rand, stop <-chan struct{}) fault {
	committed := c.committed()
	f := fault{kind: faultRedisRestart, target: "redis", from: time.Now(), dataLoss: true, committed: committed}
	c.redis.Kill()
	sleep(time.Duration(200+rng.Intn(800))*time.Millisecond, stop)
	c.redis.Start()
	f.to = time.Now()
	return f
}

// victim picks a running seckill process to fault, keeping at least one
// other running.
func (c *cluster) victim(rng *rand.Rand) *proc {
	var up []*proc
	for _, p := range c.procs {
		if p.Running() {
			up = append(up, p)
		}
	}
	if len(up) < 2 {
		return nil
	}
	return up[rng.Intn(len(up))]
}

// killProc kills a seckill process with SIGKILL (its API requests and its
// claimed batches die with it) and starts it again 0.2 to 1.5s later.
func (c *cluster) killProc(rng *rand.Rand, stop <-chan struct{}) fault {
	return c.procFault(rng, faultProcKill, func(p *proc) {
		p.kill()
		sleep(time.Duration(200+rng.Intn(1300))*time.Millisecond, stop)
		if err := p.Start(60 * time.Second); err != nil {
			c.viol.add("restart", "%s did not come back after kill -9: %v", p.Name, err)
		}
	})
}

// stopProc freezes a seckill process for 0.3 to 2s: its requests wait, its
// leases run out, its sold-out flags go stale.
func (c *cluster) stopProc(rng *rand.Rand, stop <-chan struct{}) fault {
	return c.procFault(rng, faultProcStop, func(p *proc) {
		p.stop()
		sleep(time.Duration(300+rng.Intn(1700))*time.Millisecond, stop)
		p.cont()
	})
}

// procFault applies do to a random victim process and returns it as a
// fault of kind, from just before do to its end; no fault when no process
// may be the victim.
func (c *cluster) procFault(rng *rand.Rand, kind string, do func(p *proc)) fault {
	p := c.victim(rng)
	if p == nil {
		return fault{}
	}
	f := fault{kind: kind, target: p.Name, from: time.Now()}
	do(p)
	f.to = time.Now()
	return f
}

// topUp adds 8 to 20 units to a random SKU, as the admin would, so that
// orders are taken while the drain is held (the SKUs are sold out most of
// the time, and while the drain is held no cancel or expiry gives units
// back): more than the workers can claim (two per process), so that some
// wait in Redis.
func (c *cluster) topUp(phase int, rng *rand.Rand) {
	sku := c.skus[rng.Intn(len(c.skus))]
	sku.mu.Lock()
	cur := sku.total
	sku.mu.Unlock()
	c.setStock(phase, rng, sku, min(cur+8+int64(rng.Intn(13)), 100), opSetStock, 10)
}

// holdDrain locks every SKU row in MySQL from a transaction of the test: a
// drain batch that reaches its guarded UPDATE of sold waits there with its
// orders inserted but not committed, and later orders wait in Redis. Buyers
// are not held up (the buy path reads the rows without locking them);
// cancels, expiries and stock changes wait too. release rolls back.
func (c *cluster) holdDrain() (release func(), f fault) {
	f = fault{kind: faultDrainHeld, target: "mysql skus rows", from: time.Now()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		cancel()
		return func() {}, fault{}
	}
	rows, err := tx.QueryContext(ctx, "SELECT id FROM skus FOR UPDATE")
	if err == nil {
		rows.Close()
	}
	return func() {
		_ = tx.Rollback()
		cancel()
	}, f
}

// committed reads the ids of the orders in MySQL, just before a data loss.
// (Their persisted_at is when their batch began, not when it committed: a
// batch held across the loss began before it.) A failed read leaves it
// empty, which counts every order as only in Redis: more is excused, and
// listed as such.
func (c *cluster) committed() map[string]bool {
	out := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := c.db.QueryContext(ctx, "SELECT order_id FROM orders")
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
