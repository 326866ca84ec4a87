package chaostest

import (
	"context"
	"math/rand"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testsvc"
)

// The faults of the Redis Cluster and of the Sentinel set. A failover
// leaves the deployment whole again before it ends (every primary with its
// replicas online), so that redis.wait_replicas 1 can be met and the next
// failover finds a replica to promote.

// nodeClient returns a client of the Redis node at addr, for the test's own
// questions to it (role, replicas).
func (l *lane) nodeClient(addr string) *redis.Client {
	if l.rc != nil {
		return l.rc.Client(addr)
	}
	if c, ok := l.clients.Load(addr); ok {
		return c.(*redis.Client)
	}
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, ReadTimeout: time.Second, MaxRetries: -1})
	if prev, loaded := l.clients.LoadOrStore(addr, c); loaded {
		_ = c.Close()
		return prev.(*redis.Client)
	}
	l.t.Cleanup(func() { _ = c.Close() })
	return c
}

// role is what ROLE answers on the node at addr ("master", "slave"), ""
// when it does not answer.
func (l *lane) role(addr string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	v, err := l.nodeClient(addr).Do(ctx, "ROLE").Slice()
	if err != nil || len(v) == 0 {
		return ""
	}
	s, _ := v[0].(string)
	return s
}

// server is the lane's redis-server at addr, nil if none.
func (l *lane) server(addr string) *testsvc.RedisServer {
	nodes := l.sentNodes
	if l.rc != nil {
		nodes = l.rc.Nodes
	}
	for _, n := range nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// masters are the Cluster's masters that are up, as the first node that
// answers sees them.
func (l *lane) masters() []string {
	for _, n := range l.rc.Nodes {
		view, err := l.rc.View(n.Addr())
		if err != nil {
			continue
		}
		var out []string
		for _, x := range view {
			if strings.Contains(x.Flags, "master") && !strings.Contains(x.Flags, "fail") && l.role(x.Addr) == "master" {
				out = append(out, x.Addr)
			}
		}
		sort.Strings(out)
		return out
	}
	return nil
}

// replicaOf is the address of a replica of the Cluster master at addr, ""
// if it has none.
func (l *lane) replicaOf(addr string) string {
	view, err := l.rc.View(addr)
	if err != nil {
		return ""
	}
	var id string
	for _, n := range view {
		if n.Addr == addr {
			id = n.ID
		}
	}
	for _, n := range view {
		if id != "" && n.Master == id && !strings.Contains(n.Flags, "fail") {
			return n.Addr
		}
	}
	return ""
}

// waitWhole waits until the deployment is whole again: every Cluster node
// says the cluster is ok and each master has a replica online, or the
// Sentinels' primary has both replicas online. A deployment that does not
// heal is a violation (seckill has nothing to follow).
func (l *lane) waitWhole(limit time.Duration, after string) {
	deadline := time.Now().Add(limit)
	for {
		ok := false
		if l.rc != nil {
			ok = l.rc.Ready()
		} else {
			p := l.sentinels.Master()
			ok = p != "" && l.role(p) == "master" && testsvc.ReplicaCount(l.nodeClient(p)) >= 2
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			l.viol.add("redis", "%s: the deployment is not whole again %s later", after, limit)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freezeMaster stops a random Cluster master for 0.4 to 0.9s, past the
// servers' read timeout and close to the node timeout (1s): usually the
// cluster waits for it, sometimes its replica takes over.
func (l *lane) freezeMaster(rng *rand.Rand, stop <-chan struct{}) fault {
	ms := l.masters()
	if len(ms) == 0 {
		return fault{}
	}
	m := ms[rng.Intn(len(ms))]
	node := l.server(m)
	f := fault{kind: faultMasterFreeze, target: "master " + m, from: time.Now()}
	node.Freeze()
	sleep(time.Duration(400+rng.Intn(500))*time.Millisecond, stop)
	node.Thaw()
	f.to = time.Now()
	time.Sleep(1500 * time.Millisecond) // a failover begun meanwhile ends
	l.waitWhole(30*time.Second, f.String())
	if l.role(m) != "master" {
		f.failover, f.note = true, "its replica took over"
	}
	return f
}

// killMaster kills a random Cluster master with SIGKILL, waits until its
// replica has taken its slots over, starts it again (empty: it rejoins
// from its nodes.conf as the new master's replica) and waits until it is
// in sync.
func (l *lane) killMaster(rng *rand.Rand) fault {
	ms := l.masters()
	if len(ms) == 0 {
		return fault{}
	}
	m := ms[rng.Intn(len(ms))]
	rep := l.replicaOf(m)
	if rep == "" {
		return fault{}
	}
	node := l.server(m)
	f := fault{kind: faultMasterKill, target: "master " + m + ", replica " + rep, from: time.Now(), failover: true}
	node.Kill()
	deadline := time.Now().Add(30 * time.Second)
	for l.role(rep) != "master" {
		if time.Now().After(deadline) {
			l.viol.add("redis", "%s: the replica did not take over in 30s", f)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.note = "promoted after " + time.Since(f.from).Round(time.Millisecond).String()
	node.Start()
	l.waitWhole(30*time.Second, f.String())
	f.to = time.Now()
	return f
}

// freezePrimary stops the Sentinels' primary for 0.4 to 0.9s, past the
// servers' read timeout and the Sentinels' down-after (500ms): sometimes
// they fail it over meanwhile, and it comes back as a replica with the
// commands it received while frozen.
func (l *lane) freezePrimary(rng *rand.Rand, stop <-chan struct{}) fault {
	p := l.sentinels.Master()
	node := l.server(p)
	if node == nil {
		return fault{}
	}
	f := fault{kind: faultPrimaryFreeze, target: "primary " + p, from: time.Now()}
	node.Freeze()
	sleep(time.Duration(400+rng.Intn(500))*time.Millisecond, stop)
	node.Thaw()
	f.to = time.Now()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if m := l.sentinels.Master(); m != "" && m != p {
			f.failover, f.live, f.switched, f.note = true, true, time.Now(), "failed over to "+m
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	l.waitWhole(30*time.Second, f.String())
	return f
}

// killPrimary kills the Sentinels' primary with SIGKILL, waits until they
// promote a replica, starts it again (empty; the Sentinels make it a
// replica of the new primary) and waits until both replicas are in sync.
func (l *lane) killPrimary() fault {
	p := l.sentinels.Master()
	node := l.server(p)
	if node == nil {
		return fault{}
	}
	f := fault{kind: faultPrimaryKill, target: "primary " + p, from: time.Now(), failover: true}
	node.Kill()
	l.waitNewPrimary(p, &f)
	node.Start()
	l.waitWhole(30*time.Second, f.String())
	f.to = time.Now()
	return f
}

// sentinelFailover asks a Sentinel to fail the primary over (SENTINEL
// FAILOVER: no agreement asked, the old primary is made a replica).
func (l *lane) sentinelFailover() fault {
	p := l.sentinels.Master()
	if p == "" {
		return fault{}
	}
	f := fault{kind: faultSentinelFailover, target: "primary " + p, from: time.Now(), failover: true, live: true}
	var err error
	for _, addr := range strings.Split(l.sentinels.Addrs(), ",") {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr, DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = sc.Failover(ctx, l.sentinels.Name()).Err()
		cancel()
		_ = sc.Close()
		if err == nil {
			break
		}
	}
	if err != nil {
		f.note = "refused: " + err.Error()
		f.failover, f.live = false, false
		f.to = time.Now()
		return f
	}
	l.waitNewPrimary(p, &f)
	l.waitWhole(30*time.Second, f.String())
	f.to = time.Now()
	return f
}

// waitNewPrimary waits until the Sentinels name another primary than old.
func (l *lane) waitNewPrimary(old string, f *fault) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := l.sentinels.Master(); m != "" && m != old {
			f.switched = time.Now()
			f.note = "promoted " + m + " after " + f.switched.Sub(f.from).Round(time.Millisecond).String()
			return
		}
		if time.Now().After(deadline) {
			l.viol.add("redis", "%s: no replica promoted in 30s", f)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
