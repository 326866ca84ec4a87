package faulttest

import (
	"fmt"
	"math/rand/v2"
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

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

const roomPassKey = "faulttest-room-pass-key-0123456789abcdef"

// A waiting room keeps its state in Redis, not in an instance: one of two
// instances is killed with SIGKILL while the room admits (and restarted a
// second later), and the shoppers carry on at whichever instance answers.
func TestWaitingRoomSurvivesKill(t *testing.T) {
	d := sharedDeployment(t, map[string]string{"SECKILL_ROOM_PASS_KEYS": roomPassKey})
	victim := d.serve("api-0", "serve")
	d.serve("api-1", "serve")
	roomSale(t, d, 1, func() {
		victim.Kill()
		time.Sleep(time.Second)
		victim.start()
	})
}

// The room of a drop of four sizes, as TestWaitingRoomSurvivesKill.
func TestADropsRoomSurvivesKill(t *testing.T) {
	d := sharedDeployment(t, map[string]string{"SECKILL_ROOM_PASS_KEYS": roomPassKey})
	victim := d.serve("api-0", "serve")
	d.serve("api-1", "serve")
	roomSale(t, d, 4, func() {
		victim.Kill()
		time.Sleep(time.Second)
		victim.start()
	})
}

// With redis.wait_replicas 1, the Sentinel primary holding a waiting room
// is killed while the room admits; a replica is promoted and the room goes
// on from what the replicas acknowledged: every ticket and pass a shopper
// was given is kept. The room is a drop's, of two sizes, whose stock is
// kept under the room's tag: a SKU's own room is its first size's.
func TestWaitingRoomSurvivesFailover(t *testing.T) {
	testutil.SkipShort(t, "starts seckill, redis-server and Sentinel processes")
	primary := testsvc.StartRedisServer(t, testsvc.Replicated...)
	_, port, _ := strings.Cut(primary.Addr(), ":")
	var replicas []*testsvc.RedisServer
	for range 2 {
		replicas = append(replicas, testsvc.StartRedisServer(t, append([]string{"--replicaof", "127.0.0.1", port}, testsvc.Replicated...)...))
	}
	testsvc.WaitReplicas(t, primary.Client(), 2, 20*time.Second)
	const name = "seckill"
	sentinels := testsvc.StartSentinelSet(t, name, primary.Addr(), 2)
	d := newDeployment(t, primary.Addr(), testsvc.Prefix(t), testsvc.ServerMySQL(t), map[string]string{
		"SECKILL_REDIS_ADDRS":         sentinels.Addrs(),
		"SECKILL_REDIS_MASTER_NAME":   name,
		"SECKILL_REDIS_WAIT_REPLICAS": "1",
		"SECKILL_ROOM_PASS_KEYS":      roomPassKey,
	})
	d.rdb = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: name, SentinelAddrs: strings.Split(sentinels.Addrs(), ",")})
	t.Cleanup(func() { _ = d.rdb.Close() })
	d.serve("api-0", "serve")
	d.serve("api-1", "serve")
	roomSale(t, d, 2, func() {
		primary.Kill()
		promotion(t, sentinels, primary.Addr(), replicas)
	})
}

// roomSale sells 20 units to 60 shoppers through a waiting room on d's
// instances, running fault once four shoppers were admitted, and to 6
// holders of priority codes, 3 joining before the sale and 3 as the fault
// starts. With sizes over 1 the room is a drop's, whose units are split
// over its sizes: a shopper buys a size of their own and, when it is sold
// out, tries the others with the same pass. No ticket changes, every code
// is used once, the holders who joined before the sale buy, exactly the
// stock is sold, one order per shopper, and the audit finds no buyer the
// room did not admit.
func roomSale(t *testing.T, d *deployment, sizes int, fault func()) {
	const units, shoppers, prio = 20, 60, 6
	now := time.Now().UTC()
	room := map[string]any{"opens_at": now.Add(-time.Second), "admit_per_second": 4, "pass_ttl": "20s", "overbook": 1}
	skus := make([]uint64, sizes)
	for k := range skus {
		body := map[string]any{"name": fmt.Sprintf("Sneaker %d", k), "price_cents": 12000, "stock": units / sizes, "per_user_limit": 1,
			"starts_at": now.Add(3 * time.Second), "ends_at": now.Add(time.Hour)}
		if sizes == 1 {
			body["waiting_room"] = room
		}
		skus[k] = uint64(d.created("/admin/skus", body).Num("id"))
	}
	queue := fmt.Sprintf("/api/v1/skus/%d/queue", skus[0])
	codesPath := fmt.Sprintf("/admin/skus/%d/room/codes", skus[0])
	if sizes > 1 {
		drop := uint64(d.created("/admin/drops", map[string]any{"name": "Sneaker", "skus": skus, "per_user_limit": 1, "waiting_room": room}).Num("id"))
		queue = fmt.Sprintf("/api/v1/drops/%d/queue", drop)
		codesPath = fmt.Sprintf("/admin/drops/%d/room/codes", drop)
	}
	made, _ := d.admin("POST", codesPath, map[string]any{"count": prio}, http.StatusCreated).Body["codes"].([]any)
	require.Len(t, made, prio)

	// send tries the instances in turn from i until one answers other than
	// 503 (a Redis or instance away: the answer says to retry), with the
	// priority code code, if any.
	send := func(i int, method, path, user string, body any, code string) answer {
		deadline := time.Now().Add(30 * time.Second)
		for k := 0; time.Now().Before(deadline); k++ {
			p := d.api[(i+k)%len(d.api)]
			if !p.Running() {
				continue
			}
			req, err := d.caller().Request(p.URL(), method, path, user, body)
			require.NoError(t, err)
			if code != "" {
				req.Header.Set("Seckill-Priority-Code", code)
			}
			r, err := d.caller().Send(req)
			if err == nil && r.Status != http.StatusServiceUnavailable {
				return answer{Reply: r}
			}
			time.Sleep(50 * time.Millisecond)
		}
		return answer{Err: fmt.Errorf("no instance answered %s %s", method, path)}
	}
	users := make([]string, shoppers+prio)
	for i := range users {
		users[i] = fmt.Sprintf("f%02d", i)
		if i >= shoppers {
			users[i] = fmt.Sprintf("p%d", i-shoppers)
		}
	}
	tickets := make([]string, len(users))
	join := func(i int) {
		code := ""
		if i >= shoppers {
			code, _ = made[i-shoppers].(string)
		}
		r := send(i, "POST", queue, users[i], nil, code)
		require.NoError(t, r.Err)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		assert.Equal(t, code != "", r.Body["priority"] == true, "%s: %s", users[i], r.Raw)
		tickets[i] = r.Str("ticket")
	}
	for i := range shoppers + prio/2 {
		join(i)
	}

	var admitted atomic.Int64
	faulted, late := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(faulted)
		for admitted.Load() < 4 {
			time.Sleep(20 * time.Millisecond)
		}
		go func() {
			defer close(late)
			for i := shoppers + prio/2; i < len(users); i++ {
				join(i)
			}
		}()
		fault()
	}()
	orders, last := make([]string, len(users)), make([]string, len(users))
	var wg sync.WaitGroup
	buyer := func(i int) {
		user := users[i]
		deadline := time.Now().Add(90 * time.Second)
		for time.Now().Before(deadline) {
			r := send(rand.IntN(2), "GET", queue, user, nil, "")
			if r.Err != nil || r.Status != http.StatusOK {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			assert.Equal(t, tickets[i], r.Str("ticket"), "%s keeps their ticket", user)
			last[i] = r.Raw
			switch r.Str("status") {
			case "admitted":
				admitted.Add(1)
				for k := range skus {
					sku := skus[(i+k)%len(skus)]
					b := send(rand.IntN(2), "POST", "/api/v1/orders", user,
						map[string]any{"sku_id": sku, "qty": 1, "request_id": fmt.Sprintf("room-%s-%d", user, sku), "pass": r.Str("pass")}, "")
					if b.Err == nil && b.Status == http.StatusAccepted {
						orders[i] = b.Str("order_id")
						return
					}
					if b.Err != nil || b.Status != http.StatusConflict {
						t.Errorf("%s buys with their pass: %v %s", user, b.Err, b.Raw)
						return
					}
					// sold out: the next size, with the same pass
				}
				return
			case "sold_out", "closed":
				return
			}
			wait, _ := strconv.Atoi(r.Header.Get("Retry-After"))
			time.Sleep(min(time.Duration(wait)*time.Second, 200*time.Millisecond))
		}
		t.Errorf("%s: no outcome in time", user)
	}
	for i := range shoppers + prio/2 {
		wg.Go(func() { buyer(i) })
	}
	<-late
	for i := shoppers + prio/2; i < len(users); i++ {
		wg.Go(func() { buyer(i) })
	}
	wg.Wait()
	<-faulted

	bought := 0
	for i, o := range orders {
		if o != "" {
			bought++
		}
		// A code holder who joined before the sale is admitted ahead of
		// every ticket of the line, and buys; one who joins during the
		// fault buys if units are left when their turn comes.
		if i >= shoppers && i < shoppers+prio/2 {
			assert.NotEmpty(t, o, "%s, with a priority code, buys: %s", users[i], last[i])
		}
	}
	assert.Equal(t, units, bought, "exactly the stock sold")
	codes := d.admin("GET", codesPath, nil, http.StatusOK)
	assert.EqualValues(t, prio, codes.Num("used"), "every code used once: %s", codes.Raw)
	sold := int64(0)
	for _, sku := range skus {
		rep := d.drained(sku, 60*time.Second)
		sold += rep.Sold
		require.NotNil(t, rep.WaitingRoom)
		assert.Zero(t, rep.WaitingRoom.NotAdmitted, "sku %d: %+v", sku, rep.WaitingRoom)
		assert.EqualValues(t, len(users), rep.WaitingRoom.Joined)
	}
	assert.EqualValues(t, units, sold)
	in := strings.TrimSuffix(strings.Repeat("?,", len(skus)), ",")
	args := make([]any, len(skus))
	for k, sku := range skus {
		args[k] = sku
	}
	var most int
	require.NoError(t, d.db.QueryRow("SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM orders WHERE sku_id IN ("+in+") GROUP BY user_id) u",
		args...).Scan(&most))
	assert.Equal(t, 1, most, "one order per shopper over the sizes")
}

// created posts body to path on a live instance until it is answered 201
// (the first writes may meet a Redis still settling) and returns the answer.
func (d *deployment) created(path string, body map[string]any) answer {
	d.t.Helper()
	var a answer
	for range 50 {
		a = d.call(d.live().URL(), "POST", path, "", body)
		if a.Err == nil && a.Status == http.StatusCreated {
			return a
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(d.t, http.StatusCreated, a.Status, a.Raw)
	return a
}
