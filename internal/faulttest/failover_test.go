package faulttest

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// The sale of the failover scenarios: distinct shoppers arriving at a
// steady rate for a stock they outnumber, so that it sells out after the
// failover.
const (
	failoverStock     = 1000
	failoverShoppers  = 2500
	failoverRate      = 250 // shoppers a second
	failoverInstances = 3
	// A shopper retries a 503 or a lost answer with the same request id
	// for this long at most.
	failoverRetryFor = 40 * time.Second
)

// TestRedisSentinelFailover runs a sale on a Redis primary with two
// replicas watched by three Sentinels, and fails the primary over in the
// middle of it, with the drain held (Redis holds queued orders and claimed
// batches), the way that loses writes: both replicas stop receiving the
// replication stream (REPLICAOF a port where the test hangs up: they keep
// their data), the primary goes on taking orders for half a second, and is
// then killed. The Sentinels promote the first replica (the second has
// replica-priority 0) with what it had at the cut and make the second its
// replica. The seckill instances follow the primary by name and are not
// restarted; shoppers send a request_id and retry a 503 or a lost answer
// with it, after the Retry-After, as a client should.
//
// With redis.wait_replicas 1 no order is answered 202 before a replica has
// it, so every 202 is in MySQL once and live, and nothing is refused; the
// orders the primary took after the cut were answered 503 and are taken
// again, under new order ids, by their shoppers' retries. With 0 the
// primary answers 202 for orders that die with it: the test only counts
// them (lost, and refused by MySQL's stock guard when the drain had
// already written them and the promoted replica sold their units again).
// MySQL is never oversold, and no answer is a 500, either way.
func TestRedisSentinelFailover(t *testing.T) {
	testutil.SkipShort(t, "starts seckill, redis-server and Sentinel processes")
	for _, n := range []int{1, 0} {
		t.Run(fmt.Sprintf("wait_replicas=%d", n), func(t *testing.T) { sentinelFailover(t, n) })
	}
}

func sentinelFailover(t *testing.T, n int) {
	primary := testsvc.StartRedisServer(t, testsvc.Replicated...)
	_, port, _ := strings.Cut(primary.Addr(), ":")
	successor := testsvc.StartRedisServer(t, append([]string{"--replicaof", "127.0.0.1", port}, testsvc.Replicated...)...)
	standby := testsvc.StartRedisServer(t, append([]string{"--replicaof", "127.0.0.1", port, "--replica-priority", "0"}, testsvc.Replicated...)...)
	testsvc.WaitReplicas(t, primary.Client(), 2, 20*time.Second)
	const name = "seckill"
	sentinels := testsvc.StartSentinelSet(t, name, primary.Addr(), 2)

	d := newDeployment(t, primary.Addr(), testsvc.Prefix(t), testsvc.ServerMySQL(t), map[string]string{
		"SECKILL_REDIS_ADDRS":         sentinels.Addrs(),
		"SECKILL_REDIS_MASTER_NAME":   name,
		"SECKILL_REDIS_WAIT_REPLICAS": strconv.Itoa(n),
	})
	// The test's own reads follow the primary too.
	d.rdb = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: name, SentinelAddrs: strings.Split(sentinels.Addrs(), ",")})
	t.Cleanup(func() { _ = d.rdb.Close() })

	failoverSale(t, fmt.Sprintf("sentinel-failover-wait%d", n), n, d, func(c *crowd) failoverTimes {
		var ft failoverTimes
		release := holdDrain(c)
		defer release()
		// Both replicas stop receiving: the primary's writes from now on
		// are on the primary only. The standby goes first: a write it
		// acknowledged and the successor did not would be lost, since the
		// standby is never promoted.
		dead := deadEnd(t)
		ctx := t.Context()
		for _, r := range []*testsvc.RedisServer{standby, successor} {
			require.NoError(t, r.Client().ReplicaOf(ctx, "127.0.0.1", dead).Err())
		}
		ft.cut, ft.acceptedAtCut = time.Now(), c.accepted.Load()
		time.Sleep(500 * time.Millisecond)
		ft.acceptedAtKill = c.accepted.Load()
		primary.Kill()
		ft.killed = time.Now()
		ft.promoted = sentinels.WaitMaster(successor.Addr(), 30*time.Second)
		testsvc.WaitReplicas(t, successor.Client(), 1, 30*time.Second)
		ft.replicated = time.Now()
		return ft
	})
}

// TestRedisClusterFailover runs a sale on a Redis Cluster of three masters
// with a replica each and kills the master of the SKU's hash slot in the
// middle of it, with the drain held as in TestRedisSentinelFailover. Its
// replica takes the slot over; the killed master is
// started again (empty, with its nodes.conf) and comes back as the new
// master's replica. The seckill instances, not restarted, follow the slot.
// With redis.wait_replicas 1, every 202 is in MySQL once and live; with 0
// the figures show what the kill cost (the replica was not behind here, so
// usually nothing).
func TestRedisClusterFailover(t *testing.T) {
	testutil.SkipShort(t, "starts seckill and redis-server processes")
	for _, n := range []int{1, 0} {
		t.Run(fmt.Sprintf("wait_replicas=%d", n), func(t *testing.T) { clusterFailover(t, n) })
	}
}

func clusterFailover(t *testing.T, n int) {
	cl := testsvc.StartRedisCluster(t)
	first := cl.Nodes[0].Addr()
	d := newDeployment(t, first, testsvc.Prefix(t), testsvc.ServerMySQL(t), map[string]string{
		"SECKILL_REDIS_ADDRS":         cl.Addrs(),
		"SECKILL_REDIS_WAIT_REPLICAS": strconv.Itoa(n),
	})
	failoverSale(t, fmt.Sprintf("cluster-failover-wait%d", n), n, d, func(c *crowd) failoverTimes {
		var ft failoverTimes
		ctx := t.Context()
		slot, err := cl.Client(first).ClusterKeySlot(ctx, d.prefix+stock.Tag(c.sku)+":stock").Result()
		require.NoError(t, err)
		master, err := cl.MasterOf(first, slot)
		require.NoError(t, err)
		replica := cl.ReplicaOf(master)
		release := holdDrain(c)
		defer release()
		ft.cut, ft.acceptedAtCut = time.Now(), c.accepted.Load()
		ft.acceptedAtKill = ft.acceptedAtCut
		cl.Node(master).Kill()
		ft.killed = time.Now()
		deadline := time.Now().Add(30 * time.Second)
		for {
			owner, err := cl.MasterOf(replica, slot)
			if err == nil && owner == replica {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %s did not take slot %d over in 30s:\n%s", replica, slot, cl.Describe())
			}
			time.Sleep(20 * time.Millisecond)
		}
		ft.promoted = time.Now()
		// The killed master comes back empty and replicates its successor.
		cl.Node(master).Start()
		testsvc.WaitReplicas(t, cl.Client(replica), 1, 30*time.Second)
		ft.replicated = time.Now()
		return ft
	})
}

// holdDrain holds the drain of the crowd's SKU from its 200th order and
// returns after the 300th, so that Redis holds queued orders and the
// drain claimed batches when the fault comes; release lets it go on.
func holdDrain(c *crowd) (release func()) {
	c.waitAccepted(200)
	release = c.d.holdSKURow(c.sku)
	c.waitAccepted(300)
	return release
}

// deadEnd returns the port of a listener of the test that closes every
// connection at once: a replica told to replicate from it keeps its data
// and receives nothing, and no other process can take the port meanwhile.
func deadEnd(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			_ = conn.Close()
		}
	}()
	_, port, _ := strings.Cut(l.Addr().String(), ":")
	return port
}

// failoverTimes are the moments of one failover.
type failoverTimes struct {
	cut, killed, promoted, replicated time.Time // replicated: the new primary has a replica online
	acceptedAtCut, acceptedAtKill     int64
}

// failoverSale starts the deployment's instances, seeds the SKU, sets the
// shoppers on it, runs fault while they buy and checks the sale's promises
// once it is sold out and drained: with wait_replicas n ≥ 1 all of them,
// with 0 all but the orders a failover loses, which it counts.
func failoverSale(t *testing.T, scenario string, n int, d *deployment, fault func(c *crowd) failoverTimes) {
	for i := range failoverInstances {
		d.serve(fmt.Sprintf("full-%d", i+1), "serve")
	}
	sku := d.seedRetrying(failoverStock)
	c, st := d.buyRetrying(sku, scenario, failoverShoppers, failoverRate)
	ft := fault(c)
	ss := c.Wait()
	for _, p := range d.api {
		assert.True(t, p.Running(), "%s still runs", p.Name)
		assert.Equal(t, 1, p.Starts(), "%s was not restarted", p.Name)
	}

	// Every answer, retries included: no 500, a stable body, a 503 says
	// when to retry.
	checkErrorBodies(t, st.errors)
	assert.Zero(t, st.noRetryAfter.Load(), "every 503 has a Retry-After")
	var after []shopper
	recovered := time.Duration(-1)
	for _, s := range ss {
		if s.Order != "" && s.Start.After(ft.killed) {
			after = append(after, s)
			if at := s.Start.Add(s.Took).Sub(ft.killed); recovered < 0 || at < recovered {
				recovered = at
			}
		}
	}
	assert.NotEmpty(t, after, "orders are accepted after the failover, by the same instances")

	d.waitQueueEmpty(sku, 60*time.Second)
	if n == 0 {
		// Orders the drain wrote from the old primary were sold again by
		// the new one (refused by MySQL's guard): make Redis agree with
		// MySQL, as an operator would.
		d.admin("POST", fmt.Sprintf("/admin/skus/%d/reconcile", sku), nil, http.StatusOK)
	}
	rep := d.drained(sku, 60*time.Second)
	f := figures{scenario: scenario, recoverMS: recovered.Milliseconds()}
	d.checkOrders(sku, accepted(ss), n == 0, &f)
	sq := d.sqlState(sku)
	doubles := doubleOrders(sq)
	if n > 0 {
		assert.Zero(t, f.refused, "no 202 order refused by MySQL's guard")
		assert.Zero(t, f.lost, "no 202 order lost")
		assert.Zero(t, f.extra, "every order in MySQL was answered 202 to its shopper")
		assert.Zero(t, doubles, "no shopper holds two orders")
		assert.Zero(t, st.gaveUp.Load(), "every shopper got an answer")
		assert.Equal(t, int64(failoverStock), rep.Sold, "the stock sells out")
	}
	d.verify(sku)

	f.more = []string{
		fmt.Sprintf("wait_replicas=%d", n),
		fmt.Sprintf("accepted_at_cut=%d", ft.acceptedAtCut),
		fmt.Sprintf("accepted_cut_to_kill=%d", ft.acceptedAtKill-ft.acceptedAtCut),
		fmt.Sprintf("failover_ms=%d", ft.promoted.Sub(ft.killed).Milliseconds()),
		fmt.Sprintf("replica_back_ms=%d", ft.replicated.Sub(ft.killed).Milliseconds()),
		fmt.Sprintf("accepted_after_kill=%d", len(after)),
		fmt.Sprintf("answers_503_unavailable=%d", st.unavailable.Load()),
		fmt.Sprintf("answers_503_busy=%d", st.busy.Load()),
		fmt.Sprintf("no_answer=%d", st.noAnswer.Load()),
		fmt.Sprintf("shoppers_retried=%d", st.retried.Load()),
		fmt.Sprintf("gave_up=%d", st.gaveUp.Load()),
		fmt.Sprintf("two_orders=%d", doubles),
		fmt.Sprintf("sold=%d", rep.Sold),
	}
	f.log(t)
	t.Logf("last answers: %v", tally(ss))
}

// retryStats counts what shoppers were answered on the way to their last
// answer.
type retryStats struct {
	unavailable, busy, noAnswer atomic.Int64 // 503 unavailable, 503 busy, no answer
	retried, gaveUp             atomic.Int64 // shoppers
	noRetryAfter                atomic.Int64 // 503s without a Retry-After

	mu      sync.Mutex
	errors  []shopper  // every 5xx answer
	answers []answered // every answer and lost answer, in no order
}

// answered is one answer a shopper got, or the lack of one, and when.
type answered struct {
	at     time.Time
	status int    // 0: no answer
	code   string // the error code of a 4xx or 5xx
}

// buyRetrying is buy with shoppers who send a request_id and, like a
// client following the API, retry a 503 after its Retry-After and an
// answer that never came at once, each time on the next instance, with the
// same request_id, until they get another answer or failoverRetryFor has
// passed.
func (d *deployment) buyRetrying(sku uint64, tag string, n, rate int) (*crowd, *retryStats) {
	st := &retryStats{}
	c := d.arrive(sku, tag, n, rate, func(c *crowd, i int, user string) { c.shopRetrying(i, user, st) })
	return c, st
}

func (c *crowd) shopRetrying(i int, user string, st *retryStats) {
	s := shopper{User: user}
	body := map[string]any{"sku_id": c.sku, "qty": 1, "request_id": "buy-" + user}
	giveUp := time.Now().Add(failoverRetryFor)
	for try := 0; ; try++ {
		s.Attempts++
		var retryAfter string
		s.answer, retryAfter = c.d.place(c.d.api[(i+try)%len(c.d.api)].URL(), user, body)
		st.mu.Lock()
		st.answers = append(st.answers, answered{at: s.Start.Add(s.Took), status: s.Status, code: s.Str("error")})
		st.mu.Unlock()
		var pause time.Duration
		switch {
		case s.Err != nil:
			st.noAnswer.Add(1)
		case s.Status >= 500:
			st.mu.Lock()
			st.errors = append(st.errors, s)
			st.mu.Unlock()
			if s.Status != http.StatusServiceUnavailable {
				break
			}
			if s.Str("error") == "busy" {
				st.busy.Add(1)
			} else {
				st.unavailable.Add(1)
			}
			secs, err := strconv.Atoi(retryAfter)
			if err != nil {
				st.noRetryAfter.Add(1)
				secs = 1
			}
			pause = time.Duration(secs) * time.Second
		}
		if s.Err == nil && s.Status != http.StatusServiceUnavailable {
			break
		}
		if time.Now().Add(pause).After(giveUp) {
			st.gaveUp.Add(1)
			break
		}
		if try == 0 {
			st.retried.Add(1)
		}
		time.Sleep(pause)
	}
	c.record(i, s)
}

// place sends one buy request to base and returns the answer and its
// Retry-After.
func (d *deployment) place(base, user string, body any) (answer, string) {
	a := d.call(base, "POST", "/api/v1/orders", user, body)
	if a.Err != nil {
		return a, ""
	}
	return a, a.Header.Get("Retry-After")
}

// seedRetrying creates SKU 1 on sale now with stock units, one per
// shopper, and retries a 503 (with wait_replicas, a sale change is
// answered 503 when no replica acknowledged it in time): the upsert names
// the id, so a retry changes the SKU the first attempt made.
func (d *deployment) seedRetrying(stock int64) uint64 {
	d.t.Helper()
	now := time.Now().UTC()
	spec := map[string]any{
		"id": 1, "name": "Phone", "price_cents": 99900, "stock": stock, "per_user_limit": 1,
		"starts_at": now.Add(-time.Minute), "ends_at": now.Add(time.Hour),
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		a := d.call(d.live().URL(), "POST", "/admin/skus", "", spec)
		require.NoError(d.t, a.Err)
		if a.Status == http.StatusCreated || a.Status == http.StatusOK {
			return 1
		}
		require.Equal(d.t, http.StatusServiceUnavailable, a.Status, "POST /admin/skus: %s", a.Raw)
		require.True(d.t, time.Now().Before(deadline), "POST /admin/skus still 503 after 20s: %s", a.Raw)
		time.Sleep(200 * time.Millisecond)
	}
}

// waitQueueEmpty waits until the audit finds no order of sku queued in
// Redis.
func (d *deployment) waitQueueEmpty(sku uint64, limit time.Duration) {
	d.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		r, err := d.audit(sku)
		if err == nil && r.QueuedOrders == 0 {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("orders of sku %d still queued after %s: %+v %v", sku, limit, r, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// doubleOrders counts the shoppers with more than one live order (the
// limit is one).
func doubleOrders(s sqlState) int {
	live := map[string]int{}
	for id, st := range s.status {
		if st == order.StatusPendingPayment || st == order.StatusPaid {
			live[s.users[id]]++
		}
	}
	n := 0
	for _, k := range live {
		if k > 1 {
			n++
		}
	}
	return n
}
