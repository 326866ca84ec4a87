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
		r := rng.Intn(9)
		if allowLoss && !lost && time.Now().After(lossFrom) && rng.Intn(4) == 0 {
			r = 9 + rng.Intn(2) // a data loss
		}
		var f fault
		switch {
		case r < 3:
			f = c.freezeRedis(rng, stop)
		case r < 6:
			f = c.killProc(rng, stop)
		case r < 9:
			f = c.stopProc(rng, stop)
		case r == 9:
			f, lost = c.flushRedis(), true
		default:
			f, lost = c.restartRedis(rng, stop), true
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
	f := fault{kind: faultRedisFlush, target: "redis", from: time.Now(), dataLoss: true}
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
	f := fault{kind: faultRedisRestart, target: "redis", from: time.Now(), dataLoss: true}
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
		if p.running() {
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
	p := c.victim(rng)
	if p == nil {
		return fault{}
	}
	f := fault{kind: faultProcKill, target: p.name, from: time.Now()}
	p.kill()
	sleep(time.Duration(200+rng.Intn(1300))*time.Millisecond, stop)
	if err := p.start(60 * time.Second); err != nil {
		c.viol.add("restart", "%s did not come back after kill -9: %v", p.name, err)
	}
	f.to = time.Now()
	return f
}

// stopProc freezes a seckill process for 0.3 to 2s: its requests wait, its
// leases run out, its sold-out flags go stale.
func (c *cluster) stopProc(rng *rand.Rand, stop <-chan struct{}) fault {
	p := c.victim(rng)
	if p == nil {
		return fault{}
	}
	f := fault{kind: faultProcStop, target: p.name, from: time.Now()}
	p.stop()
	sleep(time.Duration(300+rng.Intn(1700))*time.Millisecond, stop)
	p.cont()
	f.to = time.Now()
	return f
}
