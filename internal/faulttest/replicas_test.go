package faulttest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// The sale of the replica-count scenarios: shoppers arriving steadily for
// longer than the failover and the outage that may follow it, with more
// stock than shoppers, so that every answer after the failover says whether
// the new primary sells, not whether units are left.
const (
	replicasStock     = 1500
	replicasShoppers  = 1000
	replicasRate      = 100 // shoppers a second
	replicasInstances = 2
	// How long a primary left without a replica runs before the old
	// primary comes back as its replica: long enough for every shopper
	// to be refused at least once and to retry.
	replicasOutage = 2500 * time.Millisecond
)

// TestRedisFailoverReplicas runs a steady sale with redis.wait_replicas 1
// on a Sentinel primary with one promotable replica, then with two, kills
// the primary (SIGKILL) and measures what the failover costs.
//
// WAIT 1 counts the replicas of the primary that runs it. With one
// replica, the promoted replica has none, so no buy can be acknowledged:
// every buy is answered 503 unavailable (the order waits on the primary;
// a retry with the same request_id gets it once acknowledged) and every
// drain claim is handed back, until the old primary is started again
// (empty) as its replica. With two, Sentinel makes the other replica the
// new primary's, and 202s come back without anything being restarted.
//
// Either way every 202 is in MySQL once and live, nothing is oversold, no
// shopper gave up and no answer is a 500.
func TestRedisFailoverReplicas(t *testing.T) {
	testutil.SkipShort(t, "starts seckill, redis-server and Sentinel processes")
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("replicas=%d", n), func(t *testing.T) { replicaFailover(t, n) })
	}
}

func replicaFailover(t *testing.T, n int) {
	ctx := t.Context()
	primary := testsvc.StartRedisServer(t, testsvc.Replicated...)
	_, port, _ := strings.Cut(primary.Addr(), ":")
	replicas := make([]*testsvc.RedisServer, n)
	for i := range replicas {
		replicas[i] = testsvc.StartRedisServer(t, append([]string{"--replicaof", "127.0.0.1", port}, testsvc.Replicated...)...)
	}
	testsvc.WaitReplicas(t, primary.Client(), n, 20*time.Second)
	const name = "seckill"
	sentinels := testsvc.StartSentinelSet(t, name, primary.Addr(), n)

	d := newDeployment(t, primary.Addr(), testsvc.Prefix(t), testsvc.ServerMySQL(t), map[string]string{
		"SECKILL_REDIS_ADDRS":         sentinels.Addrs(),
		"SECKILL_REDIS_MASTER_NAME":   name,
		"SECKILL_REDIS_WAIT_REPLICAS": "1",
	})
	d.rdb = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: name, SentinelAddrs: strings.Split(sentinels.Addrs(), ",")})
	t.Cleanup(func() { _ = d.rdb.Close() })
	for i := range replicasInstances {
		d.serve(fmt.Sprintf("full-%d", i+1), "serve")
	}
	sku := d.seedRetrying(replicasStock)

	scenario := fmt.Sprintf("sentinel-failover-%d-replica", n)
	stopWatch := d.watchDrain(sku)
	c, st := d.buyRetrying(sku, scenario, replicasShoppers, replicasRate)
	c.waitAccepted(150)

	acceptedAtKill := c.accepted.Load()
	primary.Kill()
	killed := time.Now()
	successor, promoted := promotion(t, sentinels, primary.Addr(), replicas)
	// restarted: the old primary is started again; online: the new primary
	// has a replica online.
	var restarted, online time.Time
	var queuedAtRestart int
	if n == 1 {
		time.Sleep(time.Until(promoted.Add(replicasOutage)))
		queuedAtRestart = d.queuedOrders(successor.Client(), sku)
		restarted = time.Now()
		primary.Start() // empty: no persistence
		host, port, _ := strings.Cut(successor.Addr(), ":")
		require.NoError(t, primary.Client().ReplicaOf(ctx, host, port).Err())
	}
	testsvc.WaitReplicas(t, successor.Client(), 1, 30*time.Second)
	online = time.Now()

	ss := c.Wait()
	for _, p := range d.api {
		assert.Equal(t, 1, p.Starts(), "%s was not restarted", p.Name)
	}
	checkErrorBodies(t, st.errors)
	assert.Zero(t, st.noRetryAfter.Load(), "every 503 has a Retry-After")
	assert.Zero(t, st.gaveUp.Load(), "every shopper got an answer")

	d.waitQueueEmpty(sku, 60*time.Second)
	rep := d.drained(sku, 60*time.Second)
	writes := stopWatch()
	f := figures{scenario: scenario}
	d.checkOrders(sku, accepted(ss), false, &f)
	assert.Zero(t, f.refused, "no 202 order refused by MySQL's guard")
	assert.Zero(t, f.extra, "every order in MySQL was answered 202 to its shopper")
	assert.Zero(t, doubleOrders(d.sqlState(sku)), "no shopper holds two orders")
	assert.Equal(t, int64(f.accepted), rep.Sold, "sold counts the 202s")
	d.verify(sku)

	tl := timeline(st.answers)
	first := tl.first202(promoted)
	require.False(t, first.IsZero(), "orders are accepted after the promotion")
	if n == 1 {
		assert.Zero(t, tl.count(promoted, restarted, http.StatusAccepted, ""),
			"no 202 while the promoted primary has no replica")
		assert.NotZero(t, tl.count(promoted, restarted, http.StatusServiceUnavailable, "unavailable"),
			"buys are answered 503 unavailable while the promoted primary has no replica")
	}

	// With two replicas the new primary has one at once (Sentinel points
	// the other at it); with one, only from the old primary's restart.
	back := promoted
	if n == 1 {
		back = restarted
	}
	resumed := writes.firstAfter(promoted)
	f.recoverMS = first.Sub(back).Milliseconds()
	f.more = []string{
		fmt.Sprintf("replicas=%d", n),
		"wait_replicas=1",
		fmt.Sprintf("accepted_at_kill=%d", acceptedAtKill),
		fmt.Sprintf("failover_ms=%d", promoted.Sub(killed).Milliseconds()),
		fmt.Sprintf("answers_503_kill_to_promotion=%d", tl.count(killed, promoted, http.StatusServiceUnavailable, "")),
		fmt.Sprintf("promotion_to_first_202_ms=%d", first.Sub(promoted).Milliseconds()),
		fmt.Sprintf("answers_503_unavailable_promotion_to_first_202=%d", tl.count(promoted, first, http.StatusServiceUnavailable, "unavailable")),
		fmt.Sprintf("answers_503_busy_promotion_to_first_202=%d", tl.count(promoted, first, http.StatusServiceUnavailable, "busy")),
		fmt.Sprintf("promotion_to_replica_online_ms=%d", online.Sub(promoted).Milliseconds()),
		fmt.Sprintf("drain_stall_ms=%d", msAfter(killed, resumed)),
		fmt.Sprintf("promotion_to_drain_ms=%d", msAfter(promoted, resumed)),
		fmt.Sprintf("back_to_drain_ms=%d", msAfter(back, resumed)),
		fmt.Sprintf("mysql_at_promotion=%d", writes.at(promoted)),
		fmt.Sprintf("answers_503_unavailable=%d", st.unavailable.Load()),
		fmt.Sprintf("answers_503_busy=%d", st.busy.Load()),
		fmt.Sprintf("shoppers_retried=%d", st.retried.Load()),
		fmt.Sprintf("sold=%d", rep.Sold),
	}
	if n == 1 {
		f.more = append(f.more,
			fmt.Sprintf("promotion_to_restart_ms=%d", restarted.Sub(promoted).Milliseconds()),
			fmt.Sprintf("queued_at_restart=%d", queuedAtRestart),
			fmt.Sprintf("restart_to_replica_online_ms=%d", online.Sub(restarted).Milliseconds()),
			fmt.Sprintf("mysql_written_promotion_to_restart=%d", writes.at(restarted)-writes.at(promoted)),
		)
	}
	f.log(t)
	t.Logf("last answers: %v", tally(ss))
}

// promotion waits until every Sentinel names one of replicas the primary
// instead of old, and returns it and when the last Sentinel did.
func promotion(t *testing.T, sentinels *testsvc.SentinelSet, old string, replicas []*testsvc.RedisServer) (*testsvc.RedisServer, time.Time) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if addr := sentinels.Master(); addr != "" && addr != old {
			for _, r := range replicas {
				if r.Addr() == addr {
					return r, sentinels.WaitMaster(addr, time.Until(deadline))
				}
			}
			t.Fatalf("sentinels name %s the primary, not one of the replicas", addr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replica promoted in 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// queuedOrders counts the orders of sku waiting or in flight in its queue
// on the primary rdb reaches, in three round trips (queueLen reads each
// task on its own).
func (d *deployment) queuedOrders(rdb *redis.Client, sku uint64) int {
	d.t.Helper()
	ctx := context.Background()
	key := d.prefix + stock.Tag(sku) + ":q:"
	var tasks []string
	for _, set := range []string{"ready", "inflight"} {
		ids, err := rdb.ZRange(ctx, key+set, 0, -1).Result()
		require.NoError(d.t, err)
		for _, id := range ids {
			if !strings.HasPrefix(id, "exp:") {
				tasks = append(tasks, id)
			}
		}
	}
	if len(tasks) == 0 {
		return 0
	}
	payloads, err := rdb.HMGet(ctx, key+"data", tasks...).Result()
	require.NoError(d.t, err)
	n := 0
	for _, p := range payloads {
		if b, ok := p.(string); ok {
			orders, _ := stock.DecodeOrders([]byte(b))
			n += len(orders)
		}
	}
	return n
}

// answerLog is every answer of a crowd, in the order they came.
type answerLog []answered

func timeline(as []answered) answerLog {
	out := append(answerLog(nil), as...)
	slices.SortFunc(out, func(a, b answered) int { return a.at.Compare(b.at) })
	return out
}

// first202 is when the first 202 at or after from came (zero if none).
func (l answerLog) first202(from time.Time) time.Time {
	for _, a := range l {
		if a.status == http.StatusAccepted && !a.at.Before(from) {
			return a.at
		}
	}
	return time.Time{}
}

// count counts the answers with status (and error code, unless "") that
// came in [from, to).
func (l answerLog) count(from, to time.Time, status int, code string) int {
	n := 0
	for _, a := range l {
		if a.status == status && (code == "" || a.code == code) && !a.at.Before(from) && a.at.Before(to) {
			n++
		}
	}
	return n
}

// drainWrites are the samples of a drainWatch, oldest first.
type drainWrites []drainSample

type drainSample struct {
	at     time.Time
	orders int
}

// watchDrain starts sampling how many orders of sku MySQL holds, every
// 50ms; stop ends it and returns the samples.
func (d *deployment) watchDrain(sku uint64) (stop func() drainWrites) {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg      sync.WaitGroup
		samples drainWrites
	)
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			var n int
			if err := d.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders WHERE sku_id = ?", sku).Scan(&n); err == nil {
				samples = append(samples, drainSample{at: time.Now(), orders: n})
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	var once sync.Once
	stop = func() drainWrites {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
		return samples
	}
	d.t.Cleanup(func() { stop() })
	return stop
}

// at is the orders in MySQL at the last sample before t.
func (w drainWrites) at(t time.Time) int {
	n := 0
	for _, s := range w {
		if s.at.After(t) {
			break
		}
		n = s.orders
	}
	return n
}

// firstAfter is the first sample after t that found more orders than at t
// (zero if none).
func (w drainWrites) firstAfter(t time.Time) time.Time {
	base := w.at(t)
	for _, s := range w {
		if s.at.After(t) && s.orders > base {
			return s.at
		}
	}
	return time.Time{}
}

// msAfter is the milliseconds from from to to, -1 when to is zero.
func msAfter(from, to time.Time) int64 {
	if to.IsZero() {
		return -1
	}
	return to.Sub(from).Milliseconds()
}
