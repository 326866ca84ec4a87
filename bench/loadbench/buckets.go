package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/stock"
)

// The stock-buckets run (-buckets): one hot SKU seeded with N buckets per
// server, on a Redis Cluster, with the shipped defaults. It shows how the
// SKU's script calls and Redis CPU spread over the Cluster's masters.

// clusterNode is a Redis Cluster node whose script calls and CPU are read
// around each measurement.
type clusterNode struct {
	addr string
	pid  int // the redis-server process on this machine; 0: CPU from INFO cpu
	c    *redis.Client
}

// nodeUse is a node's counters at one moment.
type nodeUse struct {
	scripts int64   // calls of EVAL, EVALSHA and their _RO forms, FCALL
	cpu     float64 // CPU seconds
}

func (n *clusterNode) sample(ctx context.Context) nodeUse {
	u := nodeUse{cpu: cpuSeconds(n.pid)}
	stats, _ := n.c.Info(ctx, "commandstats").Result()
	u.scripts = scriptCalls(stats)
	if n.pid == 0 {
		cpu, _ := n.c.Info(ctx, "cpu").Result()
		u.cpu = infoFloat(cpu, "used_cpu_user") + infoFloat(cpu, "used_cpu_sys")
	}
	return u
}

// scriptCalls sums the calls of every script command in INFO commandstats:
// the buy script goes out as EVALSHA, and as EVAL when a node did not have
// it loaded yet.
func scriptCalls(info string) int64 {
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch name {
		case "cmdstat_eval", "cmdstat_evalsha", "cmdstat_eval_ro", "cmdstat_evalsha_ro", "cmdstat_fcall", "cmdstat_fcall_ro":
		default:
			continue
		}
		if v, ok := strings.CutPrefix(rest, "calls="); ok {
			v, _, _ = strings.Cut(v, ",")
			c, _ := strconv.ParseInt(v, 10, 64)
			n += c
		}
	}
	return n
}

func infoFloat(info, field string) float64 {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// localPID is the pid of the redis-server behind c when it runs on this
// machine, or 0.
func localPID(ctx context.Context, c *redis.Client) int {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0
	}
	pid := int(infoFloat(info, "process_id"))
	if pid <= 0 {
		return 0
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(comm)), "redis-server") {
		return 0
	}
	return pid
}

// cluster is the Redis Cluster of the run: its masters and replicas, and
// which master serves each slot.
type cluster struct {
	cc       *redis.ClusterClient
	masters  []*clusterNode
	replicas []*clusterNode
	shards   []redis.ClusterShard
}

func openCluster(ctx context.Context, addrs []string) (*cluster, error) {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	cl := &cluster{cc: cc}
	var mu sync.Mutex
	collect := func(list *[]*clusterNode) func(context.Context, *redis.Client) error {
		return func(_ context.Context, c *redis.Client) error {
			addr := c.Options().Addr
			n := &clusterNode{addr: addr, c: redis.NewClient(&redis.Options{Addr: addr})}
			n.pid = localPID(ctx, n.c)
			mu.Lock()
			*list = append(*list, n)
			mu.Unlock()
			return nil
		}
	}
	if err := cc.ForEachMaster(ctx, collect(&cl.masters)); err != nil {
		cl.close()
		return nil, fmt.Errorf("cluster masters: %w", err)
	}
	if err := cc.ForEachSlave(ctx, collect(&cl.replicas)); err != nil {
		cl.close()
		return nil, fmt.Errorf("cluster replicas: %w", err)
	}
	sort.Slice(cl.masters, func(i, j int) bool { return cl.masters[i].addr < cl.masters[j].addr })
	sort.Slice(cl.replicas, func(i, j int) bool { return cl.replicas[i].addr < cl.replicas[j].addr })
	var err error
	if cl.shards, err = cc.ClusterShards(ctx).Result(); err != nil {
		cl.close()
		return nil, fmt.Errorf("cluster shards: %w", err)
	}
	return cl, nil
}

func (cl *cluster) close() {
	for _, n := range append(cl.masters, cl.replicas...) {
		_ = n.c.Close()
	}
	_ = cl.cc.Close()
}

// masterOf is the address of the master serving slot.
func (cl *cluster) masterOf(slot int64) string {
	for _, s := range cl.shards {
		for _, r := range s.Slots {
			if r.Start > slot || slot > r.End {
				continue
			}
			for _, n := range s.Nodes {
				if n.Role == "master" {
					return net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
				}
			}
		}
	}
	return "?"
}

// clusterUse is every node's counters at one moment.
type clusterUse struct {
	masters  []nodeUse
	replicas float64 // CPU seconds of all replicas
}

func (cl *cluster) sample(ctx context.Context) clusterUse {
	var u clusterUse
	for _, n := range cl.masters {
		u.masters = append(u.masters, n.sample(ctx))
	}
	for _, n := range cl.replicas {
		u.replicas += n.sample(ctx).cpu
	}
	return u
}

// bucketRow is one measurement of the buckets run: one SKU of buckets
// buckets under load at conns connections.
type bucketRow struct {
	buckets, conns int
	r              wrkResult
	ceiling        float64 // the ceiling's rate at conns
	accepted       float64 // 202 answers during the load
	notAccepted    float64 // every other answer
	answers        string
	orders         int64 // orders of the load in SQL once drained
	catchUp        time.Duration
	tags           map[string][]string // master -> "bucket (slot)" of the SKU's tags it serves
	scripts, cpu   []float64           // per master, from the start of the load until drained
	// Per master: the load's orders taken from buckets on it, and the buy
	// script calls that accepted them (their distinct batch ids).
	ordersOn, buyCalls []int64
	replicaCPU         float64
	busy               string // CPUs each process kept busy during the load
}

func (r bucketRow) perOrder(cpu float64) float64 {
	if r.orders == 0 {
		return 0
	}
	return cpu / float64(r.orders) * 1e6
}

// bucketRuns measures one hot SKU per bucket count of list (comma-separated)
// on the Cluster, at cfg.conns and at 64 connections, against the ceiling
// measured at each, then verifies every SKU it created.
func (b *bench) bucketRuns(out io.Writer, list string) error {
	var counts []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > stock.MaxBuckets {
			return fmt.Errorf("-buckets %q: want bucket counts from 1 to %d", list, stock.MaxBuckets)
		}
		counts = append(counts, n)
	}
	ctx := context.Background()
	cl, err := openCluster(ctx, strings.Split(b.cfg.cluster, ","))
	if err != nil {
		return err
	}
	defer cl.close()
	var masters []string
	for _, m := range cl.masters {
		pid := "CPU from INFO cpu"
		if m.pid > 0 {
			pid = "pid " + strconv.Itoa(m.pid)
		}
		masters = append(masters, fmt.Sprintf("%s (%s)", m.addr, pid))
	}
	fmt.Fprintf(out, "cluster: %d masters: %s; %d replicas\n", len(cl.masters), strings.Join(masters, ", "), len(cl.replicas))

	conns := []int{b.cfg.conns}
	if b.cfg.conns != 64 {
		conns = append(conns, 64)
	}
	for _, c := range conns {
		b.conns = c
		if err := b.soldOutAndCeiling(out); err != nil {
			return err
		}
	}
	var rows []bucketRow
	for _, n := range counts {
		rs, err := b.bucketSKU(ctx, out, cl, n, conns)
		rows = append(rows, rs...)
		if err != nil {
			return err
		}
	}
	b.conns = b.cfg.conns

	verified := b.verify()
	fmt.Fprintf(out, "\nload at end: %s\n\n", loadavg())
	b.printBuckets(out, cl, rows)
	var bad float64
	var lost int64
	for _, r := range rows {
		bad += r.notAccepted + float64(r.r.socketErrors())
		lost += int64(r.accepted) - r.orders
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| check | measured | met |")
	fmt.Fprintln(out, "|---|---|---|")
	fmt.Fprintf(out, "| every buy accepted (no error, no 5xx, no socket error) | %.0f other answers | %s |\n", bad, yes(bad == 0))
	fmt.Fprintf(out, "| every accepted order in SQL once drained | %d missing | %s |\n", lost, yes(lost == 0))
	fmt.Fprintf(out, "| seckill verify: every SKU consistent | %s | %s |\n", verified, yes(strings.HasPrefix(verified, "ok")))
	if !strings.HasPrefix(verified, "ok") || lost != 0 {
		return errors.New("sale invariants violated: " + verified)
	}
	return nil
}

// bucketSKU starts a server with the shipped defaults, seeds one SKU of n
// buckets with cfg.stock units and measures it at each of conns.
func (b *bench) bucketSKU(ctx context.Context, out io.Writer, cl *cluster, n int, conns []int) ([]bucketRow, error) {
	p, a, err := b.server(fmt.Sprintf("buckets-%d", n), []string{"serve"})
	if err != nil {
		return nil, err
	}
	defer b.stopServer(p)
	id, err := a.seedBuckets(fmt.Sprintf("hot SKU, %d buckets", n), b.cfg.stock, n)
	if err != nil {
		return nil, err
	}
	b.skus = append(b.skus, id)
	tags := map[string][]string{}
	var where []placement
	var placed []string
	for _, part := range stock.Parts(uint64(id), n) { //nolint:gosec // a SKU id from the API, positive
		slot, err := cl.cc.ClusterKeySlot(ctx, part.Tag()).Result()
		if err != nil {
			return nil, fmt.Errorf("cluster keyslot %s: %w", part.Tag(), err)
		}
		m := cl.masterOf(slot)
		tags[m] = append(tags[m], fmt.Sprintf("%d (%d)", part.Bucket, slot))
		where = append(where, placement{slot: slot, master: m})
		placed = append(placed, fmt.Sprintf("%s slot %d → %s", part.Tag(), slot, m))
	}
	fmt.Fprintf(out, "sku %d, %d buckets: %s\n", id, n, strings.Join(placed, ", "))
	time.Sleep(500 * time.Millisecond) // the drain picks the SKU up

	var rows []bucketRow
	for _, c := range conns {
		b.conns = c
		var inSQL0, inSQL1, lastID int64
		if err := b.db.QueryRow("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM orders WHERE sku_id = ?", id).Scan(&inSQL0, &lastID); err != nil {
			return rows, err
		}
		before, _ := a.outcomes()
		u0, c0 := cl.sample(ctx), b.cpuNow(p)
		r, err := b.wrk(p.url, []int64{id}, b.cfg.duration)
		if err != nil {
			return rows, err
		}
		c1 := b.cpuNow(p)
		u1 := cl.sample(ctx)
		start := time.Now()
		rep, err := a.drained(id, 5*time.Minute)
		if err != nil {
			return rows, err
		}
		if rep.DeadLetters > 0 || rep.Duplicates > 0 || len(rep.Violations) > 0 {
			return rows, fmt.Errorf("sku %d: %+v", id, rep)
		}
		catchUp := time.Since(start)
		u2 := cl.sample(ctx)
		// Read once drained: the buys in flight when wrk stopped are
		// answered (and counted) after it.
		after, _ := a.outcomes()
		if err := b.db.QueryRow("SELECT COUNT(*) FROM orders WHERE sku_id = ?", id).Scan(&inSQL1); err != nil {
			return rows, err
		}
		d := diff(after, before)
		row := bucketRow{
			buckets: n, conns: c, r: r, ceiling: b.ceiling[c],
			accepted: d["accepted"], answers: answers(d, r),
			orders: inSQL1 - inSQL0, catchUp: catchUp, tags: tags,
			replicaCPU: u2.replicas - u0.replicas,
		}
		for k, v := range d {
			if k != "accepted" {
				row.notAccepted += v
			}
		}
		byBucket, err := b.bucketOrders(id, lastID)
		if err != nil {
			return rows, err
		}
		row.ordersOn = make([]int64, len(cl.masters))
		row.buyCalls = make([]int64, len(cl.masters))
		for bucket, o := range byBucket {
			for i, m := range cl.masters {
				if m.addr == where[bucket].master {
					row.ordersOn[i] += o.orders
					row.buyCalls[i] += o.batches
				}
			}
		}
		var loadRedis float64
		for i := range cl.masters {
			row.scripts = append(row.scripts, float64(u2.masters[i].scripts-u0.masters[i].scripts))
			row.cpu = append(row.cpu, u2.masters[i].cpu-u0.masters[i].cpu)
			loadRedis += u1.masters[i].cpu - u0.masters[i].cpu
		}
		if wall := float64(r.DurationUS) / 1e6; wall > 0 {
			row.busy = fmt.Sprintf("server %.2f, redis masters %.2f, replicas %.2f, mysql %.2f, wrk %.2f",
				(c1.server-c0.server)/wall, loadRedis/wall, (u1.replicas-u0.replicas)/wall, (c1.mysql-c0.mysql)/wall, r.CPU/wall)
		}
		rows = append(rows, row)
		var total float64
		for _, v := range row.cpu {
			total += v
		}
		fmt.Fprintf(out, "buckets %d -c%d: %.0f req/s (%.2f× ceiling), %.0f accepted/s, p99 %s, %s; script calls per master %v; Redis µs per order %.1f (masters)\n",
			n, c, r.rate(), r.rate()/row.ceiling, row.accepted/(float64(r.DurationUS)/1e6), ms(us(r.P99US)), row.answers, row.scripts, row.perOrder(total))
	}
	return rows, nil
}

// placement is where a bucket's hash tag lands on the Cluster.
type placement struct {
	slot   int64
	master string
}

// bucketCount is what one bucket of a SKU sold in a run.
type bucketCount struct {
	orders, batches int64
}

// bucketOrders counts the orders of sku in SQL after the row afterID per
// bucket, and their batches: an order id names its bucket and the batch of
// the buy script call that accepted it (internal/orderid).
func (b *bench) bucketOrders(sku, afterID int64) (map[int]bucketCount, error) {
	rows, err := b.db.Query(`SELECT SUBSTRING_INDEX(order_id, '-', 1) AS head, COUNT(*),
		COUNT(DISTINCT SUBSTRING(order_id, LOCATE('-', order_id) + 1, 16))
		FROM orders WHERE sku_id = ? AND id > ? GROUP BY head`, sku, afterID)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	out := map[int]bucketCount{}
	for rows.Next() {
		var head string
		var c bucketCount
		if err := rows.Scan(&head, &c.orders, &c.batches); err != nil {
			return nil, err
		}
		_, bucket, ok := orderid.ParseHead(head)
		if !ok {
			return nil, fmt.Errorf("order id head %q of sku %d", head, sku)
		}
		out[bucket] = c
	}
	return out, rows.Err()
}

func (b *bench) printBuckets(out io.Writer, cl *cluster, rows []bucketRow) {
	var addrs []string
	for _, m := range cl.masters {
		addrs = append(addrs, m.addr)
	}
	fmt.Fprintf(out, "One hot SKU in stock buckets, the shipped defaults (stock.strategy lock, batch_max 64, rate limits on; distinct shoppers), on the %d-master Redis Cluster %s (%d replicas):\n\n",
		len(cl.masters), strings.Join(addrs, ", "), len(cl.replicas))
	fmt.Fprintln(out, "| buckets | -c | req/s | × ceiling | accepted orders/s | × ceiling | p99 | answers | drained after the load | Redis CPU per order: masters / replicas | script calls per order | CPUs busy during the load |")
	fmt.Fprintln(out, "|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---:|---|")
	for _, r := range rows {
		wall := float64(r.r.DurationUS) / 1e6
		var cpu, scripts float64
		for i := range r.cpu {
			cpu += r.cpu[i]
			scripts += r.scripts[i]
		}
		perCall := ""
		if r.orders > 0 {
			perCall = fmt.Sprintf("%.3f", scripts/float64(r.orders))
		}
		fmt.Fprintf(out, "| %d | %d | %.0f | %.2f | %.0f | %.2f | %s | %s | %.1f s | %.1f / %.1f µs | %s | %s |\n",
			r.buckets, r.conns, r.r.rate(), r.r.rate()/r.ceiling, r.accepted/wall, r.accepted/wall/r.ceiling, ms(us(r.r.P99US)),
			r.answers, r.catchUp.Seconds(), r.perOrder(cpu), r.perOrder(r.replicaCPU), perCall, r.busy)
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Per master, from the start of the load until the last order was in SQL. Orders and buy-script calls from SQL: an order id names its bucket and the batch of the buy script call that accepted it. All script calls: EVAL, EVALSHA, their _RO forms and FCALL in INFO commandstats (buy, lock, queue and any other user of the node). CPU from /proc/<pid>/stat.")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| buckets | -c | master | buckets on it (slot) | orders | buy-script calls (orders per call) | share of buy-script calls | all script calls (share) | CPU s | CPU per order of the run | CPU per order taken on it |")
	fmt.Fprintln(out, "|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		var scripts float64
		var buys int64
		for i := range r.scripts {
			scripts += r.scripts[i]
			buys += r.buyCalls[i]
		}
		for i, m := range cl.masters {
			on := strings.Join(r.tags[m.addr], ", ")
			if on == "" {
				on = "–"
			}
			calls, taken := "0", "–"
			if r.buyCalls[i] > 0 {
				calls = fmt.Sprintf("%d (%.1f)", r.buyCalls[i], float64(r.ordersOn[i])/float64(r.buyCalls[i]))
			}
			if r.ordersOn[i] > 0 {
				taken = fmt.Sprintf("%.1f µs", r.cpu[i]/float64(r.ordersOn[i])*1e6)
			}
			fmt.Fprintf(out, "| %d | %d | %s | %s | %d | %s | %s | %.0f (%s) | %.2f | %.1f µs | %s |\n",
				r.buckets, r.conns, m.addr, on, r.ordersOn[i], calls, percent(float64(r.buyCalls[i]), float64(buys)),
				r.scripts[i], percent(r.scripts[i], scripts), r.cpu[i], r.perOrder(r.cpu[i]), taken)
		}
	}
}

func percent(part, whole float64) string {
	if whole <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f %%", part/whole*100)
}

// cleanCluster deletes the keys under prefix on every master of the Cluster.
func cleanCluster(addrs []string, prefix string) {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer func() { _ = cc.Close() }()
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
		// One key per UNLINK, pipelined: the keys of a scan page lie in
		// different slots, which one multi-key UNLINK refuses on a Cluster.
		pipe := c.Pipeline()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			pipe.Unlink(ctx, iter.Val())
			if pipe.Len() == 1000 {
				if _, err := pipe.Exec(ctx); err != nil {
					return err
				}
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		_, err := pipe.Exec(ctx)
		return err
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadbench: keys under %s left on the Cluster: %v\n", prefix, err)
	}
}
