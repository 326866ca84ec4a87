// Command loadbench measures seckill's HTTP throughput on one machine in one
// run, with one client (wrk, every request a buy by a user never seen
// before), against a ceiling: a no-op Gin handler answering a 409 of the same
// size. The shipped defaults come first (rate limits on), at -c256 and -c64:
// the sold-out path, the in-stock path of one hot SKU (lock and atomic
// strategies) and a flash crowd of simultaneous buyers; then named variants
// (rate limits off, without request combining, larger batches, 100 SKUs),
// the drain rate into MySQL, the accepted-to-persisted lag, Redis and MariaDB
// CPU per order and the server's peak RSS; then it checks the sale
// invariants of every SKU it created with `seckill verify` and prints a
// markdown table.
//
// It builds bin/seckill from the repository, starts a private redis-server
// (or uses -redis) and uses its own database on the MySQL server of
// SECKILL_TEST_MYSQL_DSN (dropped at the end).
//
// With -buckets it runs only the stock-buckets run (buckets.go): one hot SKU
// split into each of the given bucket counts, on the Redis Cluster of
// -cluster, and how its orders, script calls and Redis CPU spread over the
// Cluster's masters.
//
// With -events it runs only the order events run (events.go): a sale of
// one hot SKU per receiver of order events, and the events delivered per
// second against the drain's orders per second.
//
//	cd bench && go run ./loadbench            # about 3 minutes
//	cd bench && go run ./loadbench -buckets 1,3,6
//	cd bench && go run ./loadbench -events all
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

type config struct {
	root       string
	redis      string
	mysql      string
	duration   time.Duration
	threads    int
	conns      int
	stock      int64
	skus       int
	drain      int64
	crowd      int
	crowdStock int64
	// crowdRounds is how many times the flash crowd runs.
	crowdRounds int
	keep        bool
	profile     string
	only        string
	defaults    bool
	drainEnv    string
	serveEnv    string
	buckets     string
	cluster     string
	// sqlFloor, floorRows and floorWorkers: the SQL insert measurement.
	sqlFloor     bool
	floorRows    int
	floorWorkers int
	// room, roomRounds, roomBuys and roomLooks: the waiting-room run (room.go).
	room       bool
	roomRounds int
	roomBuys   bool
	roomLooks  bool
	// cmdStats: print Redis's commands per accepted order of each in-stock
	// run.
	cmdStats bool
	// costRef, costRounds: the -cost run (cost.go); rowsOut, when set,
	// receives the rows of a run.
	costRef    string
	costRounds int
	rowsOut    *[]row
	// events, eventRounds, natsURL and amqpURL: the -events run (events.go).
	events      string
	eventRounds int
	natsURL     string
	amqpURL     string
}

func main() {
	if len(os.Args) == 4 && os.Args[1] == "ceiling" {
		runCeiling(os.Args[2], os.Args[3])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "seckill" {
		runSeckill(os.Args[2:])
		return
	}
	var cfg config
	flag.StringVar(&cfg.root, "root", "..", "the seckill repository (built with go build ./cmd/seckill)")
	flag.StringVar(&cfg.redis, "redis", "", "Redis address; empty starts a private redis-server")
	flag.StringVar(&cfg.mysql, "mysql", envOr("SECKILL_TEST_MYSQL_DSN", "root:@tcp(127.0.0.1:3306)/"), "MySQL server DSN; the benchmark creates and drops its own database")
	flag.DurationVar(&cfg.duration, "d", 10*time.Second, "length of each wrk run")
	flag.IntVar(&cfg.threads, "t", 2, "wrk threads")
	flag.IntVar(&cfg.conns, "c", 256, "wrk connections")
	flag.Int64Var(&cfg.stock, "stock", 1_000_000, "units of each in-stock SKU")
	flag.IntVar(&cfg.skus, "skus", 100, "SKUs of the many-SKU runs")
	flag.Int64Var(&cfg.drain, "drain", 200_000, "orders queued for the drain run")
	flag.IntVar(&cfg.crowd, "crowd", 5000, "simultaneous buyers of the flash crowd")
	flag.Int64Var(&cfg.crowdStock, "crowd-stock", 10, "units the flash crowd buys")
	flag.IntVar(&cfg.crowdRounds, "crowd-rounds", 5, "rounds of the flash crowd, each against seckill and the ceiling")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the database and the work directory")
	flag.StringVar(&cfg.drainEnv, "drain-env", "", "comma-separated SECKILL_...=value settings for the drain's worker, e.g. SECKILL_WORKER_CONCURRENCY=8")
	flag.StringVar(&cfg.serveEnv, "serve-env", "", "comma-separated SECKILL_...=value settings added to every seckill server, e.g. SECKILL_REDIS_POOL_SIZE=100")
	flag.StringVar(&cfg.profile, "profile", "", "run the servers in this process's seckill mode and write a CPU profile per server into this directory")
	flag.BoolVar(&cfg.defaults, "defaults", false, "run only the shipped defaults' rows (sold-out, hot SKU lock and atomic, at -c and -c64, and the flash crowd), then verify")
	flag.StringVar(&cfg.buckets, "buckets", "", "run only the stock-buckets run: one hot SKU per comma-separated bucket count (e.g. 1,3,6), on the Redis Cluster of -cluster")
	flag.StringVar(&cfg.cluster, "cluster", envOr("SECKILL_TEST_REDIS_CLUSTER_ADDRS", ""), "Redis Cluster addresses (comma-separated) of the -buckets run")
	flag.StringVar(&cfg.only, "only", "", "run only these comma-separated runs: soldout (with the ceiling), crowd, drain and in-stock variants (strategy-bBATCH-sSKUS, e.g. lock-b64-s1)")
	flag.BoolVar(&cfg.sqlFloor, "sql-floor", false, "run only the SQL measurement: MariaDB CPU per order row of the drain's transaction, for the orders table as shipped and other layouts")
	flag.IntVar(&cfg.floorRows, "floor-rows", 150_000, "rows written per layout by -sql-floor")
	flag.IntVar(&cfg.floorWorkers, "floor-workers", 2, "concurrent writers of -sql-floor")
	flag.BoolVar(&cfg.room, "room", false, "run only the waiting-room run: a look at a room and a join against the sold-out answer and the ceiling, and a hot-SKU buy with and without a pass, in rounds")
	flag.IntVar(&cfg.roomRounds, "room-rounds", 3, "rounds of the -room run")
	flag.BoolVar(&cfg.roomBuys, "room-buys", false, "with -room, run only the hot-SKU buys with and without a pass, in rounds")
	flag.BoolVar(&cfg.roomLooks, "room-looks", false, "with -room, run only the ceiling, the sold-out answer, the looks, the joins and the durable floor, in rounds (no buys)")
	flag.BoolVar(&cfg.cmdStats, "cmdstats", false, "print Redis's commands per accepted order (calls and µs, from INFO commandstats) of each in-stock run")
	flag.StringVar(&cfg.costRef, "cost", "", "run only the cost comparison: the hot-SKU and many-SKU rows of the seckill tree at this directory (an earlier commit) and of -root, alternated, -cost-rounds times; prints now/then of the rate and of CPU per accepted order")
	flag.StringVar(&cfg.events, "events", "", "run only the order events run: a hot-SKU sale per receiver (comma-separated, or all: "+strings.Join(eventReceiverNames, ", ")+"), events delivered per second against the drain's orders per second")
	flag.IntVar(&cfg.eventRounds, "event-rounds", 1, "rounds of the -events run")
	flag.StringVar(&cfg.natsURL, "nats", envOr("SECKILL_TEST_NATS_URL", "nats://127.0.0.1:4222"), "NATS server with JetStream of the -events run")
	flag.StringVar(&cfg.amqpURL, "amqp", envOr("SECKILL_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/"), "RabbitMQ of the -events run; it makes a vhost of its own with rabbitmqctl")
	flag.IntVar(&cfg.costRounds, "cost-rounds", 3, "rounds of the -cost run")
	flag.Parse()
	run := run
	if cfg.sqlFloor {
		run = sqlFloor
	}
	if cfg.costRef != "" {
		run = runCost
	}
	if err := run(cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// bench is one benchmark run.
type bench struct {
	cfg    config
	dir    string
	bin    string
	tag    string
	runs   int
	env    []string
	db     *sql.DB
	rows   []row
	skus   []int64
	peak   int64
	checks []check
	// Processes whose CPU use is shown for each run (0: unknown).
	redisPID, mysqlPID int
	// soldOutDetail is seckill's sold-out answer's detail, which the
	// ceiling answers with too.
	soldOutDetail string
	// conns is the wrk connection count of the runs in progress, and
	// ceiling the ceiling's rate measured with it.
	conns   int
	ceiling map[int]float64
	// redisAddr is the Redis of the runs; replicaStop stops the replica the
	// wait_replicas runs started (nil: none yet).
	redisAddr   string
	ownRedis    bool
	replicaStop func()
	// passPool is how many admitted shoppers a buy-with-a-pass run makes;
	// fastestBuy is the highest rate of the room run's buy runs so far.
	passPool   int
	fastestBuy float64
}

// cpuUse samples the CPU time of the server, Redis and MySQL around a run.
type cpuUse struct {
	server, redis, mysql float64
}

func (b *bench) cpuNow(server *proc) cpuUse {
	return cpuUse{cpuSeconds(server.cmd.Process.Pid), cpuSeconds(b.redisPID), cpuSeconds(b.mysqlPID)}
}

// cpuSplit says how many CPUs each process kept busy during r.
func (b *bench) cpuSplit(before, after cpuUse, r wrkResult) string {
	wall := float64(r.DurationUS) / 1e6
	if wall <= 0 {
		return ""
	}
	f := func(name string, sec float64, known bool) string {
		if !known {
			return name + " ?"
		}
		return fmt.Sprintf("%s %.2f", name, sec/wall)
	}
	return strings.Join([]string{
		f("server", after.server-before.server, true),
		f("redis", after.redis-before.redis, b.redisPID > 0),
		f("mysql", after.mysql-before.mysql, b.mysqlPID > 0),
		f("wrk", r.CPU, true),
	}, ", ")
}

type row struct {
	name    string
	rate    float64
	p50     time.Duration
	p99     time.Duration
	ceiling float64 // the ceiling's rate with the same connections; 0: no ratio
	cpu     string
	answers string
	lag     string
	rss     int64
	// The server's, Redis's and MariaDB's CPU per persisted order, µs
	// (in-stock runs).
	serverPerOrder, redisPerOrder, mysqlPerOrder float64
	// ordersPerTx is the mean number of orders the drain wrote per SQL
	// transaction (in-stock runs).
	ordersPerTx float64
}

type check struct {
	target string
	got    string
	ok     bool
}

func run(cfg config, out io.Writer) error {
	if _, err := exec.LookPath("wrk"); err != nil {
		return errors.New("wrk is not installed (apt-get install -y wrk, or run loadtest/bench.sh)")
	}
	dir, err := os.MkdirTemp("", "loadbench")
	if err != nil {
		return err
	}
	b := &bench{cfg: cfg, dir: dir, tag: strconv.FormatInt(time.Now().UnixNano()%1_000_000_000, 36), conns: cfg.conns, ceiling: map[int]float64{}}
	if cfg.rowsOut != nil {
		defer func() { *cfg.rowsOut = b.rows }()
	}
	defer func() {
		if !cfg.keep {
			_ = os.RemoveAll(dir)
		} else {
			fmt.Fprintln(out, "work directory (logs):", dir)
		}
	}()

	fmt.Fprintln(out, "building seckill ...")
	b.bin = filepath.Join(dir, "seckill")
	build := exec.Command("go", "build", "-trimpath", "-o", b.bin, "./cmd/seckill") //nolint:gosec // the go command building this repository into our work directory
	build.Dir = cfg.root
	if o, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w: %s", err, o)
	}

	redisAddr := cfg.redis
	if cfg.buckets != "" {
		if cfg.cluster == "" {
			return errors.New("-buckets needs -cluster (or SECKILL_TEST_REDIS_CLUSTER_ADDRS)")
		}
		redisAddr = cfg.cluster
	} else if redisAddr == "" {
		addr, pid, stop, err := startRedis(dir)
		if err != nil {
			return err
		}
		defer stop()
		redisAddr = addr
		b.redisPID = pid
		b.ownRedis = true
	}
	b.redisAddr = redisAddr
	defer func() {
		if b.replicaStop != nil {
			b.replicaStop()
		}
	}()
	prefix := "loadbench:" + b.tag + ":"
	if cfg.buckets != "" {
		defer cleanCluster(strings.Split(redisAddr, ","), prefix)
	} else {
		defer cleanRedis(redisAddr, prefix)
	}

	dsn, dropDB, err := createDB(cfg.mysql, "loadbench_"+b.tag)
	if err != nil {
		return err
	}
	if !cfg.keep {
		defer dropDB()
	}
	b.db, err = sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer func() { _ = b.db.Close() }()

	b.env = []string{
		"SECKILL_REDIS_ADDRS=" + redisAddr,
		"SECKILL_REDIS_KEY_PREFIX=" + prefix,
		"SECKILL_MYSQL_DSN=" + dsn,
		"SECKILL_ADMIN_TOKEN=" + adminToken,
		"SECKILL_AUTH_MODE=header",     // wrk's shoppers identify by X-User-ID
		"SECKILL_PAYMENT_MODE=trusted", // and would pay their own orders
		"SECKILL_LOG_LEVEL=warn",
		// New SKUs are picked up by the drain within this; the default 2s
		// would add up to 2s to the lag of the first orders of each run.
		"SECKILL_WORKER_SKU_REFRESH=200ms",
	}
	if cfg.serveEnv != "" {
		b.env = append(b.env, strings.Split(cfg.serveEnv, ",")...)
	}
	b.mysqlPID = findSQLServer()
	machine := describeMachine(strings.Split(redisAddr, ",")[0])
	fmt.Fprintln(out, machine)
	fmt.Fprintf(out, "wrk -t%d -c%d, %s per run; load at start: %s\n\n", cfg.threads, cfg.conns, cfg.duration, loadavg())

	if cfg.buckets != "" {
		return b.bucketRuns(out, cfg.buckets)
	}
	if cfg.room {
		return b.roomRuns(out)
	}
	if cfg.events != "" {
		return b.eventRuns(out, cfg.events)
	}

	if cfg.only != "" {
		for _, v := range strings.Split(cfg.only, ",") {
			var err error
			switch v {
			case "drain":
				err = b.drainRun(out)
			case "soldout":
				err = b.soldOutAndCeiling(out)
			case "crowd":
				err = b.flashCrowd(out)
			default:
				err = b.inStockRun(out, v)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	// The shipped defaults first, at the configured connections and at 64.
	for _, c := range []int{cfg.conns, 64} {
		b.conns = c
		if err := b.soldOutAndCeiling(out); err != nil {
			return err
		}
		for _, strategy := range []string{"lock", "atomic"} {
			if err := b.inStock(out, variant{strategy: strategy, batch: 64, skus: 1, defaults: true}); err != nil {
				return err
			}
		}
		if c == cfg.conns {
			if err := b.flashCrowd(out); err != nil {
				return err
			}
		}
		if c == 64 {
			break
		}
	}
	b.conns = cfg.conns
	if cfg.defaults {
		return b.finish(out)
	}
	for _, v := range []variant{
		// What the rate limits cost: none, since they are checked in the
		// buy script.
		{strategy: "atomic", batch: 64, skus: 1, env: []string{"SECKILL_RATE_LIMIT_ENABLED=false"}},
		{strategy: "lock", batch: 1, skus: 1}, {strategy: "lock", batch: 256, skus: 1}, {strategy: "atomic", batch: 1, skus: 1},
		{strategy: "lock", batch: 64, skus: cfg.skus}, {strategy: "atomic", batch: 64, skus: cfg.skus},
		// Many SKUs mean many combining lines and drain consumers sharing
		// the Redis pool and MySQL: the same run with a larger pool and one
		// drain worker per SKU.
		{strategy: "atomic", batch: 64, skus: cfg.skus, env: manySKUTuning},
		// What surviving a failover costs: a replica, and every buy batch
		// and drain claim waiting for it (last: the replica stays up).
		{strategy: "lock", batch: 64, skus: 1, env: waitOneReplica, replica: true},
		{strategy: "atomic", batch: 64, skus: 1, env: waitOneReplica, replica: true},
	} {
		if err := b.inStock(out, v); err != nil {
			return err
		}
	}
	if err := b.drainRun(out); err != nil {
		return err
	}
	return b.finish(out)
}

// finish verifies every SKU of the run and prints the tables.
func (b *bench) finish(out io.Writer) error {
	verified := b.verify()

	fmt.Fprintf(out, "\nload at end: %s\n\n", loadavg())
	b.print(out)
	b.checks = append(b.checks, check{"seckill verify: every SKU consistent", verified, strings.HasPrefix(verified, "ok")})
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| target | measured | met |")
	fmt.Fprintln(out, "|---|---|---|")
	for _, c := range b.checks {
		fmt.Fprintf(out, "| %s | %s | %s |\n", c.target, c.got, yes(c.ok))
	}
	if !strings.HasPrefix(verified, "ok") {
		return errors.New("sale invariants violated: " + verified)
	}
	return nil
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// server starts `seckill <args>` with the bench environment plus extra.
func (b *bench) server(name string, args []string, extra ...string) (*proc, *api, error) {
	port, err := freePort()
	if err != nil {
		return nil, nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	env := append(append([]string{"SECKILL_HTTP_ADDR=" + addr}, b.env...), extra...)
	bin, args, env := b.command(name, args, env)
	p, err := startProc(b.dir, name, bin, args, env, "http://"+addr, "/readyz")
	if err != nil {
		return nil, nil, err
	}
	return p, newAPI(p.url), nil
}

// command is how to run `seckill args`: the binary built from the
// repository, or with -profile this program's seckill mode with a CPU profile.
func (b *bench) command(name string, args, env []string) (string, []string, []string) {
	if b.cfg.profile == "" {
		return b.bin, args, env
	}
	self, err := os.Executable()
	if err != nil {
		return b.bin, args, env
	}
	return self, append([]string{"seckill"}, args...), append(env, "LOADBENCH_CPUPROFILE="+filepath.Join(b.cfg.profile, name+".pprof"))
}

func (b *bench) stopServer(p *proc) int64 {
	rss := p.peakRSS()
	b.peak = max(b.peak, rss)
	p.stop()
	return rss
}

// soldOutAndCeiling measures the sold-out path with the defaults, then the
// ceiling with a body of the same size, at b.conns connections.
func (b *bench) soldOutAndCeiling(out io.Writer) error {
	p, a, err := b.server("soldout", []string{"serve"})
	if err != nil {
		return err
	}
	id, err := a.seed("sold out", 1)
	if err != nil {
		return err
	}
	b.skus = append(b.skus, id)
	// Sell the unit, then learn the sold-out answer's detail.
	if _, err := b.wrk(p.url, []int64{id}, time.Second); err != nil {
		return err
	}
	detail, err := soldOutDetail(p.url, id)
	if err != nil {
		return err
	}
	before, _ := a.outcomes()
	c0 := b.cpuNow(p)
	r, err := b.wrk(p.url, []int64{id}, b.cfg.duration)
	if err != nil {
		return err
	}
	c1 := b.cpuNow(p)
	after, _ := a.outcomes()
	rss := b.stopServer(p)
	soldOut := row{name: fmt.Sprintf("buy, sold-out SKU, defaults, -c%d", b.conns), rate: r.rate(), p50: us(r.P50US), p99: us(r.P99US),
		cpu: b.cpuSplit(c0, c1, r), answers: answers(diff(after, before), r), rss: rss}

	b.soldOutDetail = detail
	c, err := b.startCeiling()
	if err != nil {
		return err
	}
	cc0 := b.cpuNow(c)
	cr, err := b.wrk(c.url, []int64{id}, b.cfg.duration)
	cc1 := b.cpuNow(c)
	c.stop()
	if err != nil {
		return err
	}
	b.ceiling[b.conns] = cr.rate()
	soldOut.ceiling = cr.rate()
	b.rows = append(b.rows, row{name: fmt.Sprintf("ceiling: no-op Gin handler, same 409 body, -c%d", b.conns), rate: cr.rate(), p50: us(cr.P50US), p99: us(cr.P99US),
		ceiling: cr.rate(), cpu: b.cpuSplit(cc0, cc1, cr), answers: fmt.Sprintf("%d × 409", cr.Non2xx)}, soldOut)
	fmt.Fprintf(out, "-c%d: ceiling %.0f req/s; sold-out path %.0f req/s (%.2f×)\n", b.conns, cr.rate(), r.rate(), r.rate()/cr.rate())
	return nil
}

func soldOutDetail(url string, sku int64) (string, error) {
	req, err := http.NewRequest("POST", url+"/api/v1/orders", strings.NewReader(fmt.Sprintf(`{"sku_id":%d,"qty":1}`, sku)))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User-ID", "loadbench-probe")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Error  string `json:"error"`
		Detail string `json:"detail"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusConflict || body.Error != "sold_out" {
		return "", fmt.Errorf("expected 409 sold_out from the sold-out SKU, got %d %+v", resp.StatusCode, body)
	}
	return body.Detail, nil
}

// inStock measures buys of SKUs with plenty of stock by users never seen
// before, and the lag from acceptance to SQL for the orders of the run.
// manySKUTuning is the configuration of the tuned many-SKU run.
var manySKUTuning = []string{"SECKILL_REDIS_POOL_SIZE=200", "SECKILL_WORKER_CONCURRENCY=1"}

// waitOneReplica is the configuration of the runs that wait for a replica.
var waitOneReplica = []string{"SECKILL_REDIS_WAIT_REPLICAS=1"}

// variant is an in-stock run: the stock strategy, batch_max, how many SKUs
// share the load, and settings beyond the defaults.
type variant struct {
	strategy string
	batch    int
	skus     int
	env      []string
	defaults bool // the shipped configuration (lock or atomic strategy alone)
	replica  bool // the private Redis gets a replica first
	// room: the SKU has a waiting room that admits everyone, and every
	// buy carries a pass from it (room.go). roomBeside: the SKU has none,
	// but the server first admits as many shoppers to a room of another
	// SKU, so that it holds what the server of a room run holds.
	room, roomBeside bool
}

func (b *bench) inStock(out io.Writer, v variant) error {
	strategy, batch, nskus, env := v.strategy, v.batch, v.skus, v.env
	name := fmt.Sprintf("%s-b%d-s%d-c%d", strategy, batch, nskus, b.conns)
	if v.room {
		name += "-pass"
	}
	if v.roomBeside {
		name += "-beside"
	}
	if len(env) > 0 {
		name += "-tuned"
	}
	if v.replica && b.replicaStop == nil {
		if !b.ownRedis {
			fmt.Fprintf(out, "skipped %s: a replica is started only for the private Redis (no -redis)\n", name)
			return nil
		}
		stop, err := startReplica(filepath.Join(b.dir, "replica"), b.redisAddr)
		if err != nil {
			return err
		}
		b.replicaStop = stop
	}
	p, a, err := b.server(name, []string{"serve"},
		append([]string{"SECKILL_STOCK_STRATEGY=" + strategy, "SECKILL_STOCK_BATCH_MAX=" + strconv.Itoa(batch)}, env...)...)
	if err != nil {
		return err
	}
	defer b.stopServer(p)
	var ids []int64
	var passes []string
	for i := range nskus {
		seedName := fmt.Sprintf("in stock %s %d", name, i)
		var id int64
		switch {
		case v.room:
			id, passes, err = b.seedPassRoom(a, seedName)
		case v.roomBeside:
			if _, _, err = b.seedPassRoom(a, seedName+" (a room beside)"); err == nil {
				id, err = a.seed(seedName, b.cfg.stock)
			}
		default:
			id, err = a.seed(seedName, b.cfg.stock)
		}
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	b.skus = append(b.skus, ids...)
	time.Sleep(500 * time.Millisecond) // the drain picks the SKUs up
	before, _ := a.outcomes()
	var stats0 map[string]cmdStat
	if b.cfg.cmdStats {
		stats0 = commandStats(b.redisAddr)
	}
	c0 := b.cpuNow(p)
	var r wrkResult
	if v.room {
		r, err = b.runScript(p.url, "room.lua", roomLua, b.cfg.duration, passes...)
	} else {
		r, err = b.wrk(p.url, ids, b.cfg.duration)
	}
	if err != nil {
		return err
	}
	c1 := b.cpuNow(p)
	after, _ := a.outcomes()
	start := time.Now()
	if err := b.persisted(ids, int64(diff(after, before)["accepted"]), 5*time.Minute); err != nil {
		return err
	}
	catchUp := time.Since(start)
	c2 := b.cpuNow(p)
	if b.cfg.cmdStats {
		printCommandStats(out, name, stats0, commandStats(b.redisAddr), int64(diff(after, before)["accepted"]))
	}
	// The audit reads every order of the row again, so it runs after the
	// figures are taken.
	for _, id := range ids {
		rep, err := a.drained(id, 5*time.Minute)
		if err != nil {
			return err
		}
		if rep.DeadLetters > 0 || rep.Duplicates > 0 || len(rep.Violations) > 0 {
			return fmt.Errorf("sku %d: %+v", id, rep)
		}
	}
	p50, p99, n, err := b.lag(ids)
	if err != nil {
		return err
	}
	perTx := a.ordersPerTx()
	rss := b.stopServer(p)
	// Everything Redis and MariaDB did from the start of the load until the
	// last order was in SQL, per order: buy script, claim, insert, deadline,
	// ack (the machine runs nothing else meanwhile; the audit came after).
	var serverPer, redisPer, mysqlPer float64
	if n > 0 {
		serverPer = (c2.server - c0.server) / float64(n) * 1e6
		redisPer = (c2.redis - c0.redis) / float64(n) * 1e6
		mysqlPer = (c2.mysql - c0.mysql) / float64(n) * 1e6
	}
	skuLabel := "one hot SKU"
	if nskus > 1 {
		skuLabel = fmt.Sprintf("%d SKUs", nskus)
	}
	comb := fmt.Sprintf("batch_max %d", batch)
	if batch == 1 {
		comb = "batch_max 1 (no combining)"
	}
	if v.defaults {
		comb = "defaults"
	}
	if v.room {
		comb += ", every buy with a waiting room pass"
	}
	if v.roomBeside {
		comb += ", no room (a room of another SKU beside it, as full)"
	}
	if len(env) > 0 {
		comb += "; " + strings.ToLower(strings.ReplaceAll(strings.Join(env, ", "), "SECKILL_", ""))
	}
	b.rows = append(b.rows, row{
		name: fmt.Sprintf("buy, in stock, %s, %s, %s, -c%d", skuLabel, strategy, comb, b.conns),
		rate: r.rate(), p50: us(r.P50US), p99: us(r.P99US), ceiling: b.ceiling[b.conns],
		cpu:            b.cpuSplit(c0, c1, r),
		answers:        answers(diff(after, before), r),
		lag:            fmt.Sprintf("%s / %s (%d orders; drained %.1fs after the load)", ms(p50), ms(p99), n, catchUp.Seconds()),
		rss:            rss,
		serverPerOrder: serverPer, redisPerOrder: redisPer, mysqlPerOrder: mysqlPer, ordersPerTx: perTx,
	})
	fmt.Fprintf(out, "%-40s %8.0f req/s  p50 %s p99 %s  lag p50 %s p99 %s  %s  CPUs: %s  per order: server %.1f µs, redis %.1f µs, mysql %.1f µs, sum %.1f µs (%.0f orders per SQL transaction)\n", name, r.rate(), us(r.P50US), us(r.P99US), ms(p50), ms(p99), answers(diff(after, before), r), b.cpuSplit(c0, c1, r), serverPer, redisPer, mysqlPer, serverPer+redisPer+mysqlPer, perTx)
	return nil
}

// persisted waits until SQL counts units sold of skus (one order is one
// unit), polling the skus rows only.
func (b *bench) persisted(skus []int64, units int64, timeout time.Duration) error {
	q := "SELECT COALESCE(SUM(sold), 0) FROM skus WHERE id IN (?" + strings.Repeat(", ?", len(skus)-1) + ")"
	args := make([]any, len(skus))
	for i, id := range skus {
		args[i] = id
	}
	deadline := time.Now().Add(timeout)
	for {
		var sold int64
		if err := b.db.QueryRow(q, args...).Scan(&sold); err != nil {
			return err
		}
		if sold >= units {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("skus %v: %d of %d units in SQL after %s", skus, sold, units, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lag is the accepted-to-persisted time of every order of skus, from SQL.
func (b *bench) lag(skus []int64) (p50, p99 time.Duration, n int, err error) {
	var lags []int64
	for _, id := range skus {
		var err error
		if lags, err = b.skuLags(lags, id); err != nil {
			return 0, 0, 0, err
		}
	}
	if len(lags) == 0 {
		return 0, 0, 0, nil
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	return us(lags[len(lags)/2]), us(lags[min(len(lags)-1, len(lags)*99/100)]), len(lags), nil
}

// skuLags appends the accepted-to-persisted time, in µs, of every order of
// sku to lags.
func (b *bench) skuLags(lags []int64, sku int64) ([]int64, error) {
	rows, err := b.db.Query("SELECT TIMESTAMPDIFF(MICROSECOND, created_at, persisted_at) FROM orders WHERE sku_id = ?", sku)
	if err != nil {
		return lags, err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return lags, err
		}
		lags = append(lags, v)
	}
	return lags, rows.Err()
}

// flashCrowd releases cfg.crowd buyers at once on a SKU with cfg.crowdStock
// units, with the default configuration, and the same burst on the ceiling
// server, in cfg.crowdRounds rounds that alternate which goes first. One
// burst's p99 moves by half between runs on a shared machine, so the check
// is on the median of the rounds' ratios.
func (b *bench) flashCrowd(out io.Writer) error {
	p, a, err := b.server("crowd", []string{"serve"})
	if err != nil {
		return err
	}
	defer b.stopServer(p)
	c, err := b.startCeiling()
	if err != nil {
		return err
	}
	defer c.stop()
	var ours, theirs []crowdResult
	var ratios []float64
	statuses := map[int]int{}
	fivexx, wrong := 0, 0
	for round := range b.cfg.crowdRounds {
		id, err := a.seed("flash crowd", b.cfg.crowdStock)
		if err != nil {
			return err
		}
		b.skus = append(b.skus, id)
		time.Sleep(300 * time.Millisecond)
		tag := fmt.Sprintf("%s-%d", b.tag, round)
		var r, cr crowdResult
		if round%2 == 0 {
			r, err = crowd(p.url, id, b.cfg.crowd, tag)
			if err == nil {
				cr, err = crowd(c.url, id, b.cfg.crowd, tag+"c")
			}
		} else {
			cr, err = crowd(c.url, id, b.cfg.crowd, tag+"c")
			if err == nil {
				r, err = crowd(p.url, id, b.cfg.crowd, tag)
			}
		}
		if err != nil {
			return err
		}
		rep, err := a.drained(id, time.Minute)
		if err != nil {
			return err
		}
		ours, theirs = append(ours, r), append(theirs, cr)
		ratios = append(ratios, float64(r.p99)/float64(max(cr.p99, 1)))
		fivexx += r.errors
		for code, n := range r.statuses {
			statuses[code] += n
			if code >= 500 {
				fivexx += n
			}
		}
		if rep.Orders != b.cfg.crowdStock || rep.Sold != b.cfg.crowdStock || !rep.Consistent {
			wrong++
		}
		fmt.Fprintf(out, "flash crowd %d, round %d: p50 %s p99 %s max %s, %v, %d orders; the ceiling's p99 %s (%.2f×)\n",
			r.n, round+1, ms(r.p50), ms(r.p99), ms(r.max), r.statuses, rep.Orders, ms(cr.p99), ratios[len(ratios)-1])
	}
	rss := b.stopServer(p)
	codes := make([]int, 0, len(statuses))
	for code := range statuses {
		codes = append(codes, code)
	}
	sort.Ints(codes)
	var parts []string
	for _, code := range codes {
		parts = append(parts, fmt.Sprintf("%d × %d", statuses[code], code))
	}
	rounds := len(ours)
	p50, p99 := medianCrowd(ours)
	cp50, cp99 := medianCrowd(theirs)
	b.rows = append(b.rows, row{
		name: fmt.Sprintf("flash crowd: %d buyers at once, %d units, defaults (median of %d rounds)", b.cfg.crowd, b.cfg.crowdStock, rounds),
		p50:  p50, p99: p99,
		answers: strings.Join(parts, ", ") + fmt.Sprintf(" in all; %d orders in SQL each round", b.cfg.crowdStock),
		rss:     rss,
	}, row{
		name: fmt.Sprintf("the same crowd against the ceiling (%d requests at once, no-op handler; median of %d rounds)", b.cfg.crowd, rounds),
		p50:  cp50, p99: cp99,
	})
	ratio := median(ratios)
	b.checks = append(b.checks,
		check{"flash crowd p99 ≤ 1.1 × the ceiling server's on the same burst (median of the rounds' ratios)", fmt.Sprintf("%.2f× (rounds: %s)", ratio, joinRatios(ratios)), ratio <= 1.1},
		check{"flash crowd: zero 5xx", strconv.Itoa(fivexx), fivexx == 0},
		check{fmt.Sprintf("flash crowd: exactly %d orders every round", b.cfg.crowdStock), fmt.Sprintf("%d of %d rounds wrong", wrong, rounds), wrong == 0})
	return nil
}

// startCeiling starts the ceiling server, answering buys with seckill's
// sold-out detail.
func (b *bench) startCeiling() (*proc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	var env []string
	if b.cfg.buckets == "" {
		// The durable floor of the -room run (runCeiling).
		env = []string{"LB_FLOOR_REDIS=" + strings.Split(b.redisAddr, ",")[0], "LB_FLOOR_KEY=loadbench:" + b.tag + ":floor"}
	}
	return startProc(b.dir, "ceiling", self, []string{"ceiling", addr, b.soldOutDetail}, env, "http://"+addr, "/healthz")
}

func medianCrowd(rs []crowdResult) (p50, p99 time.Duration) {
	a, b := make([]float64, len(rs)), make([]float64, len(rs))
	for i, r := range rs {
		a[i], b[i] = float64(r.p50), float64(r.p99)
	}
	return time.Duration(median(a)), time.Duration(median(b))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func joinRatios(v []float64) string {
	parts := make([]string, len(v))
	for i, r := range v {
		parts[i] = fmt.Sprintf("%.2f", r)
	}
	return strings.Join(parts, ", ")
}

// drainRun queues cfg.drain orders with the API alone (no workers), then
// starts `seckill worker` and times until every order is in SQL.
func (b *bench) drainRun(out io.Writer) error {
	p, a, err := b.server("drain-api", []string{"serve", "--api-only"}, "SECKILL_STOCK_STRATEGY=atomic")
	if err != nil {
		return err
	}
	id, err := a.seed("drain", b.cfg.drain)
	if err != nil {
		b.stopServer(p)
		return err
	}
	b.skus = append(b.skus, id)
	for {
		left, err := a.stockLeft(id)
		if err != nil {
			b.stopServer(p)
			return err
		}
		if left == 0 {
			break
		}
		if _, err := b.wrk(p.url, []int64{id}, 5*time.Second); err != nil {
			b.stopServer(p)
			return err
		}
	}
	b.stopServer(p)

	port, err := freePort()
	if err != nil {
		return err
	}
	start := time.Now()
	wenv := append([]string{"SECKILL_HTTP_ADDR=127.0.0.1:" + strconv.Itoa(port)}, b.env...)
	if b.cfg.drainEnv != "" {
		wenv = append(wenv, strings.Split(b.cfg.drainEnv, ",")...)
	}
	bin, args, env := b.command("worker", []string{"worker"}, wenv)
	w, err := startProc(b.dir, "worker", bin, args, env, "", "")
	if err != nil {
		return err
	}
	var n int64
	for {
		if err := b.db.QueryRow("SELECT COUNT(*) FROM orders WHERE sku_id = ?", id).Scan(&n); err != nil {
			w.stop()
			return err
		}
		if n >= b.cfg.drain {
			break
		}
		if time.Since(start) > 5*time.Minute {
			w.stop()
			return fmt.Errorf("drain: %d of %d orders in SQL after 5 minutes", n, b.cfg.drain)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wall := time.Since(start)
	var spanUS int64
	if err := b.db.QueryRow("SELECT TIMESTAMPDIFF(MICROSECOND, MIN(persisted_at), MAX(persisted_at)) FROM orders WHERE sku_id = ?", id).Scan(&spanUS); err != nil {
		w.stop()
		return err
	}
	rss := w.peakRSS()
	b.peak = max(b.peak, rss)
	w.stop()
	wallRate := float64(n) / wall.Seconds()
	spanRate := float64(n) / (float64(spanUS) / 1e6)
	b.rows = append(b.rows, row{
		name:    fmt.Sprintf("drain: %d queued orders into MySQL (seckill worker, defaults)", n),
		rate:    wallRate,
		answers: fmt.Sprintf("%.1fs from process start (%.0f orders/s between first and last batch)", wall.Seconds(), spanRate),
		rss:     rss,
	})
	b.checks = append(b.checks, check{"drain ≥ 20,000 orders/s", fmt.Sprintf("%.0f orders/s", wallRate), wallRate >= 20000})
	fmt.Fprintf(out, "drain %d orders: %.2fs wall, %.0f orders/s (%.0f between first and last batch)\n", n, wall.Seconds(), wallRate, spanRate)
	return nil
}

// verify runs `seckill verify` on every SKU of the run.
func (b *bench) verify() string {
	args := []string{"verify"}
	for _, id := range b.skus {
		args = append(args, "--sku", strconv.FormatInt(id, 10))
	}
	cmd := exec.Command(b.bin, args...) //nolint:gosec // the seckill binary this program built
	cmd.Env = append(os.Environ(), b.env...)
	o, err := cmd.CombinedOutput()
	last := strings.TrimSpace(tail2(string(o)))
	if err != nil {
		return "FAILED: " + last
	}
	return "ok: " + last
}

func tail2(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func (b *bench) print(out io.Writer) {
	fmt.Fprintln(out, "| run | req/s | p50 | p99 | × ceiling | answers | accepted→persisted lag p50 / p99 | CPU per accepted order: server / Redis / MariaDB = sum (orders per SQL transaction) | peak RSS | CPUs busy during the run |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---|---|---|---:|---|")
	for _, r := range b.rows {
		rate, ratio, p50, p99, rss, per := "", "", "", "", "", ""
		if r.rate > 0 {
			rate = fmt.Sprintf("%.0f", r.rate)
		}
		if r.ceiling > 0 {
			ratio = fmt.Sprintf("%.2f", r.rate/r.ceiling)
		}
		if r.p50 > 0 {
			p50, p99 = ms(r.p50), ms(r.p99)
		}
		if r.rss > 0 {
			rss = fmt.Sprintf("%d MB", r.rss>>20)
		}
		if r.redisPerOrder > 0 || r.mysqlPerOrder > 0 {
			per = fmt.Sprintf("%.1f / %.1f / %.1f = %.1f µs (%.0f)", r.serverPerOrder, r.redisPerOrder, r.mysqlPerOrder, r.serverPerOrder+r.redisPerOrder+r.mysqlPerOrder, r.ordersPerTx)
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.name, rate, p50, p99, ratio, r.answers, r.lag, per, rss, r.cpu)
	}
	find := func(name string) (row, bool) {
		for _, r := range b.rows {
			if r.name == name {
				return r, true
			}
		}
		return row{}, false
	}
	var targets []check
	for _, c := range []int{b.cfg.conns, 64} {
		for _, t := range []struct {
			name string
			min  float64
		}{
			{fmt.Sprintf("buy, sold-out SKU, defaults, -c%d", c), 0.85},
			{fmt.Sprintf("buy, in stock, one hot SKU, lock, defaults, -c%d", c), 0.35},
			{fmt.Sprintf("buy, in stock, one hot SKU, atomic, defaults, -c%d", c), 0.45},
		} {
			if r, ok := find(t.name); ok && r.ceiling > 0 {
				got := r.rate / r.ceiling
				targets = append(targets, check{fmt.Sprintf("%s ≥ %.2f × ceiling", t.name, t.min), fmt.Sprintf("%.2f×", got), got >= t.min})
			}
		}
	}
	for _, strategy := range []string{"lock", "atomic"} {
		if r, ok := find(fmt.Sprintf("buy, in stock, one hot SKU, %s, defaults, -c%d", strategy, b.cfg.conns)); ok {
			targets = append(targets,
				check{fmt.Sprintf("Redis CPU per order ≤ 11 µs (hot SKU, %s, defaults)", strategy), fmt.Sprintf("%.1f µs", r.redisPerOrder), r.redisPerOrder <= 11},
				check{fmt.Sprintf("MariaDB CPU per order ≤ 8.5 µs (hot SKU, %s, defaults)", strategy), fmt.Sprintf("%.1f µs", r.mysqlPerOrder), r.mysqlPerOrder <= 8.5})
		}
	}
	b.checks = append(targets, b.checks...)
	var worstLag time.Duration
	for _, r := range b.rows {
		if r.lag != "" {
			if _, p99, ok := strings.Cut(strings.SplitN(r.lag, " (", 2)[0], " / "); ok {
				if d, err := time.ParseDuration(strings.ReplaceAll(p99, " ", "")); err == nil {
					worstLag = max(worstLag, d)
				}
			}
		}
	}
	b.checks = append(b.checks,
		check{"lag p99 ≤ 1 s at the in-stock rates (worst run)", ms(worstLag), worstLag <= time.Second},
		check{"peak RSS ≤ 256 MB (largest process)", fmt.Sprintf("%d MB", b.peak>>20), b.peak <= 256<<20})
}

func answers(d map[string]float64, r wrkResult) string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%.0f %s", d[k], k))
	}
	if e := r.socketErrors(); e > 0 {
		parts = append(parts, fmt.Sprintf("%d socket errors", e))
	}
	return strings.Join(parts, ", ")
}

func us(v int64) time.Duration { return time.Duration(v) * time.Microsecond }

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return "load average " + strings.Join(f[:3], " ")
}

func describeMachine(redisAddr string) string {
	model := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	rv := "?"
	c := redis.NewClient(&redis.Options{Addr: redisAddr})
	if info, err := c.Info(context.Background(), "server").Result(); err == nil {
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(line, "redis_version:"); ok {
				rv = strings.TrimSpace(v)
			}
		}
	}
	_ = c.Close()
	wv := "?"
	o, _ := exec.Command("wrk", "-v").CombinedOutput() // prints its version and exits 1
	if f := strings.Fields(string(o)); len(f) > 1 {
		wv = f[1]
	}
	return fmt.Sprintf("machine: %d CPUs (%s), %s, Redis %s, wrk %s", runtime.NumCPU(), model, runtime.Version(), rv, wv)
}

// createDB creates a database on the server of base and returns its DSN and
// a function that drops it.
func createDB(base, name string) (string, func(), error) {
	mc, err := mysql.ParseDSN(base)
	if err != nil {
		return "", nil, fmt.Errorf("mysql dsn: %w", err)
	}
	mc.DBName = ""
	admin, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		return "", nil, err
	}
	if _, err := admin.Exec("CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		_ = admin.Close()
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	mc.DBName = name
	var version string
	_ = admin.QueryRow("SELECT VERSION()").Scan(&version)
	fmt.Printf("database %s on %s (%s)\n", name, mc.Addr, version)
	return mc.FormatDSN(), func() {
		if _, err := admin.Exec("DROP DATABASE IF EXISTS `" + name + "`"); err != nil {
			fmt.Fprintf(os.Stderr, "loadbench: database %s left behind: %v\n", name, err)
		}
		_ = admin.Close()
	}, nil
}

func cleanRedis(addr, prefix string) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	ctx := context.Background()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 500 {
			c.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		c.Unlink(ctx, batch...)
	}
}

// inStockRun is the in-stock run -only names v: strategy-bN-sN, with -w1
// for a replica every write waits for.
func (b *bench) inStockRun(out io.Writer, v string) error {
	var strategy string
	var batch, skus int
	name, wait := strings.CutSuffix(v, "-w1")
	if _, err := fmt.Sscanf(strings.ReplaceAll(name, "-", " "), "%s b%d s%d", &strategy, &batch, &skus); err != nil {
		return fmt.Errorf("-only %s: want soldout, crowd, drain, strategy-bN-sN or strategy-bN-sN-w1: %w", v, err)
	}
	vr := variant{strategy: strategy, batch: batch, skus: skus}
	if wait {
		vr.env, vr.replica = waitOneReplica, true
	}
	return b.inStock(out, vr)
}
