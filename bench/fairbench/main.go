// Command fairbench measures how fair a flash sale is to humans when bots
// join it: the bots' share of the units with the SKU's waiting room, with
// the room and a proof of work at its entrance, without a room, and with a
// drop of several sizes through one room, against one `seckill serve` over
// real HTTP (real Redis and MariaDB, the shipped defaults, rate limits on).
//
// Each run creates a fresh SKU (-units units, per_user_limit 1) per mode and
// lets -shoppers shoppers at it, -bots of them bots, held by bot operators
// of -bot-ids identities each:
//
//   - with the room (random mode, -admit per second, pass_ttl -pass-ttl,
//     overbook -overbook), the room opens -window before the sale starts.
//     Bots join the instant it opens, then look at their place -speedup
//     times as often as Retry-After says (at least every -bot-min), and buy
//     at once when admitted. Humans arrive uniformly spread over the window,
//     join, look again when retry_after_ms says, and buy a moment
//     (-human-min to -human-max) after being admitted.
//   - with the room and a proof of work (in -pow-runs of the runs, spread
//     among them; pow_bits -pow-bits), every shopper's challenge is fetched
//     and solved in Go before the room opens (no machine here hashes at
//     the pace of 10,000 devices at once), and each shopper joins with its
//     proof when its own device would have found it: a human -human-hashes
//     hashes a second from its arrival, a bot operator -bot-hashes from the
//     opening, solving its identities one after the other. Then as with
//     the room.
//   - without it, the SKU starts -window after the same moment. Bots buy
//     from the start, retrying every -bot-min (-speedup times the humans'
//     rate); humans arrive over the window and buy a moment (-human-min to
//     -human-max) after the start, retrying as Retry-After says.
//   - a drop (docs/shop/drops.md): -sizes SKUs sharing the -units, made the
//     sizes of one product (per_user_limit 1 over them all) with the room's
//     settings, met as with the room at the drop's queue. An admitted
//     shopper buys a size chosen at random and, answered sold_out, tries
//     the others in random order with the same pass (a human a moment
//     before each, a bot at once).
//
// Units are counted per class from the 202 answers, checked against the
// orders in MySQL after the drain, where no shopper may have two (over a
// drop's SKUs either); with a room, the published draw is checked too (its
// seed against the commitment published before the start, and the buyers
// against the head of the line it gives). At the end every SKU is checked
// with `seckill verify`, and a markdown table gives the bots' share of
// units and the time to sell out per mode (median and range over the
// runs), and whether each room meets the goal (-goal); under it, per room,
// the bots' share of the tickets drawn and how many humans joined after
// the draw (many on a machine too busy to answer their joins in time).
//
//	cd bench && go run ./fairbench                # 20 runs per mode, 3 with proof of work
//	cd bench && go run ./fairbench -runs 3 -modes pow,none
//	cd bench && go run ./fairbench -modes room,drop -sizes 5
package main

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

type config struct {
	root     string
	redis    string
	mysql    string
	runs     int
	shoppers int
	bots     int
	units    int64
	window   time.Duration
	lead     time.Duration
	admit    int
	passTTL  time.Duration
	overbook float64
	speedup  int
	botMin   time.Duration
	humanMin time.Duration
	humanMax time.Duration
	conns    int
	timeout  time.Duration
	modes    string
	serveEnv string
	keep     bool
	tolerate float64
	botIDs   int
	powRuns  int
	powBits  int
	// powWindow is the pre-queue window of the pow mode (window: the
	// others').
	powWindow time.Duration
	// humanHashes and botHashes are hashes per second: a human's device,
	// and a bot operator's, shared by its identities.
	humanHashes, botHashes float64
	// sizes is the number of SKUs of a drop.
	sizes int
}

func main() {
	var cfg config
	flag.StringVar(&cfg.root, "root", "..", "the seckill repository (built with go build ./cmd/seckill)")
	flag.StringVar(&cfg.redis, "redis", "", "Redis address; empty starts a private redis-server")
	flag.StringVar(&cfg.mysql, "mysql", envOr("SECKILL_TEST_MYSQL_DSN", "root:@tcp(127.0.0.1:3306)/"), "MySQL server DSN; the benchmark creates and drops its own database")
	flag.IntVar(&cfg.runs, "runs", 20, "runs of each mode")
	flag.IntVar(&cfg.shoppers, "shoppers", 10000, "shoppers per run, bots included")
	flag.IntVar(&cfg.bots, "bots", 1000, "bots among the shoppers")
	flag.Int64Var(&cfg.units, "units", 200, "units of each SKU")
	flag.DurationVar(&cfg.window, "window", 5*time.Second, "pre-queue window: from the room's opening (and the bots' and humans' first arrivals) to the start (the pow mode: -pow-window)")
	flag.DurationVar(&cfg.lead, "lead", 1500*time.Millisecond, "time from creating a SKU to its window's opening")
	flag.IntVar(&cfg.admit, "admit", 100, "the room's admit_per_second")
	flag.DurationVar(&cfg.passTTL, "pass-ttl", 30*time.Second, "the room's pass_ttl")
	flag.Float64Var(&cfg.overbook, "overbook", 1.0, "the room's overbook (the shipped default is 1.2)")
	flag.IntVar(&cfg.speedup, "speedup", 20, "how many times as fast as a human a bot looks and buys")
	flag.DurationVar(&cfg.botMin, "bot-min", 50*time.Millisecond, "a bot's shortest interval between requests")
	flag.DurationVar(&cfg.humanMin, "human-min", 100*time.Millisecond, "a human's shortest delay after the start (no room) or admission (room) before buying")
	flag.DurationVar(&cfg.humanMax, "human-max", time.Second, "a human's longest such delay")
	flag.IntVar(&cfg.conns, "conns", 256, "HTTP connections to the server, at most, for the bots and for the humans each")
	flag.DurationVar(&cfg.timeout, "run-timeout", 60*time.Second, "longest a sale runs after its start before its shoppers are stopped")
	flag.StringVar(&cfg.modes, "modes", "room,pow,none,drop", "modes to run, comma-separated: room (with the waiting room), pow (the room with a proof of work), none (no room), drop (a drop of -sizes SKUs through one room)")
	flag.IntVar(&cfg.sizes, "sizes", 5, "SKUs of the drop mode, sharing the -units (the first get the remainder)")
	flag.IntVar(&cfg.botIDs, "bot-ids", 30, "shopper identities each bot operator holds")
	flag.IntVar(&cfg.powRuns, "pow-runs", 3, "runs of the pow mode, at most -runs, spread among them: each solves every shopper's proof here first (about a minute on 2 cores)")
	flag.DurationVar(&cfg.powWindow, "pow-window", 30*time.Second, "the pow mode's pre-queue window: long beside a human's solve time, as docs/shop/waiting-room.md#proof-of-work advises")
	flag.IntVar(&cfg.powBits, "pow-bits", 16, "the pow mode's pow_bits: 2^16 hashes, 1.1 s for a human on average")
	flag.Float64Var(&cfg.humanHashes, "human-hashes", 60_000, "a human's hashes per second (a mid-range phone, docs/shop/waiting-room.md#proof-of-work)")
	flag.Float64Var(&cfg.botHashes, "bot-hashes", 1_200_000, "a bot operator's hashes per second, shared by its identities")
	flag.StringVar(&cfg.serveEnv, "serve-env", "", "comma-separated SECKILL_...=value settings added to the server (the rows are then labelled tuned)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the database and the work directory (logs)")
	flag.Float64Var(&cfg.tolerate, "goal", 3, "the goal: with a room, the bots' median share of units within this many points of their share of shoppers")
	flag.Parse()
	if err := run(cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fairbench:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

const adminToken = "fairbench-admin-token-0123456789abcdef"

// bench is the benchmark: the server and its clients.
type bench struct {
	cfg   config
	dir   string
	bin   string
	env   []string
	url   string
	db    *sql.DB
	tag   string
	skus  []int64
	admin *http.Client
	// bots and humans: each class's connections to the server.
	bots, humans *http.Client
	// hashRate is this machine's hashes per second over all its solvers,
	// as last measured: how long a pow sale's solving will take.
	hashRate float64
}

// mode is how a sale meets its shoppers.
type mode int

const (
	modeRoom mode = iota // the waiting room
	modePow              // the waiting room, with a proof of work to join
	modeNone             // no room
	modeDrop             // a drop of several SKUs through one room
)

var modes = []mode{modeRoom, modePow, modeNone, modeDrop}

func (m mode) room() bool { return m != modeNone }

// key names the mode in -modes and in the shoppers' ids.
func (m mode) key() string { return [...]string{"room", "pow", "none", "drop"}[m] }

func (m mode) String() string {
	return [...]string{"waiting room", "waiting room + proof of work", "no room", "drop"}[m]
}

// outcome is one sale's result.
type outcome struct {
	run      int
	mode     mode
	botUnits int64
	humUnits int64
	sqlBots  int64
	sqlHums  int64
	sqlOther int64
	// sqlTwice counts the shoppers with more than one order of the sale
	// (of a drop: over its sizes).
	sqlTwice int64
	// sizes are the units sold of each SKU (more than one: a drop's).
	sizes    []int64
	timedOut bool
	soldOut  time.Duration
	late     [2]int // late joiners: bots, humans
	notIn    [2]int // shoppers who never got a ticket
	drawNote string
	drawOK   bool
	fivexx   int
	errs     int
	answers  [2]string // bots', humans'
	// opMax is the most units one bot operator bought.
	opMax int64
	pow   *powStats
	// skipped says why the sale was not run.
	skipped string
}

func (o outcome) total() int64 { return o.botUnits + o.humUnits }

func (o outcome) botShare() float64 {
	if o.total() == 0 {
		return math.NaN()
	}
	return 100 * float64(o.botUnits) / float64(o.total())
}

func run(cfg config, out io.Writer) error {
	switch {
	case cfg.bots < 0 || cfg.bots > cfg.shoppers || cfg.shoppers <= 0:
		return errors.New("want 0 <= -bots <= -shoppers, -shoppers > 0")
	case cfg.runs <= 0 || cfg.units <= 0 || cfg.speedup <= 0 || cfg.botIDs <= 0:
		return errors.New("-runs, -units, -speedup and -bot-ids must be positive")
	case cfg.sizes < 1 || cfg.sizes > 50 || int64(cfg.sizes) > cfg.units:
		return errors.New("want 1 <= -sizes <= 50 (a drop's most) and -sizes <= -units")
	case cfg.powBits < 1 || cfg.powBits > 32 || cfg.humanHashes <= 0 || cfg.botHashes <= 0:
		return errors.New("want 1 <= -pow-bits <= 32, -human-hashes and -bot-hashes positive")
	}
	chosen := map[mode]bool{}
	for _, k := range strings.Split(cfg.modes, ",") {
		i := slices.IndexFunc(modes, func(m mode) bool { return m.key() == k })
		if i < 0 {
			return fmt.Errorf("-modes: unknown mode %q (room, pow, none, drop)", k)
		}
		chosen[modes[i]] = true
	}
	dir, err := os.MkdirTemp("", "fairbench")
	if err != nil {
		return err
	}
	b := &bench{cfg: cfg, dir: dir, tag: strconv.FormatInt(time.Now().Unix()%1_000_000, 36)}
	ok := false
	defer func() {
		if !cfg.keep && ok {
			_ = os.RemoveAll(dir)
		} else {
			fmt.Fprintln(out, "work directory (server log seckill.log):", dir)
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
	if redisAddr == "" {
		addr, stop, err := startRedis(dir)
		if err != nil {
			return err
		}
		defer stop()
		redisAddr = addr
	}
	prefix := "fairbench:" + b.tag + ":"
	defer cleanRedis(redisAddr, prefix)
	dsn, dropDB, err := createDB(cfg.mysql, "fairbench_"+b.tag)
	if err != nil {
		return err
	}
	if !cfg.keep {
		defer dropDB()
	}
	if b.db, err = sql.Open("mysql", dsn); err != nil {
		return err
	}
	defer func() { _ = b.db.Close() }()

	passKey := make([]byte, 32)
	_, _ = rand.Read(passKey)
	b.env = []string{
		"SECKILL_REDIS_ADDRS=" + redisAddr,
		"SECKILL_REDIS_KEY_PREFIX=" + prefix,
		"SECKILL_MYSQL_DSN=" + dsn,
		"SECKILL_ADMIN_TOKEN=" + adminToken,
		"SECKILL_AUTH_MODE=header",     // the shoppers identify by X-User-ID
		"SECKILL_PAYMENT_MODE=trusted", // required outside embedded mode; nobody pays here
		"SECKILL_ROOM_PASS_KEYS=" + hex.EncodeToString(passKey),
		// New SKUs are picked up by the drain within this (default 2s):
		// only how soon a run's orders are in SQL.
		"SECKILL_WORKER_SKU_REFRESH=200ms",
	}
	if cfg.serveEnv != "" {
		b.env = append(b.env, strings.Split(cfg.serveEnv, ",")...)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	server, err := startProc(dir, "seckill", b.bin, []string{"serve"}, append([]string{"SECKILL_HTTP_ADDR=" + addr}, b.env...), "http://"+addr, "/readyz")
	if err != nil {
		return err
	}
	defer server.stop()
	b.url = server.url
	b.admin = &http.Client{Timeout: 60 * time.Second}
	b.bots, b.humans = newClient(cfg.conns), newClient(cfg.conns)

	fmt.Fprintf(out, "machine: %d CPUs, %s; %s\n", runtime.NumCPU(), runtime.Version(), loadavg())
	fmt.Fprintf(out, "%d shoppers of whom %d bots (%.1f%%), %d units, per_user_limit 1; pre-queue window %s; bots %d× as fast as humans (at least every %s); humans act %s–%s after the start or their admission; %d connections per class\n",
		cfg.shoppers, cfg.bots, b.botPct(), cfg.units, cfg.window, cfg.speedup, cfg.botMin, cfg.humanMin, cfg.humanMax, cfg.conns)
	if ops := (cfg.bots + cfg.botIDs - 1) / cfg.botIDs; ops > 0 {
		fmt.Fprintf(out, "the bots: %d operators holding %d identities each (the last %d)\n", ops, cfg.botIDs, cfg.bots-(ops-1)*cfg.botIDs)
	}
	fmt.Fprintln(out, "a sale's shoppers start no new request once its units are all sold (202s counted)")
	if chosen[modePow] {
		b.hashRate = measureHashRate(cfg.powBits, 2*time.Second)
		expect := math.Exp2(float64(cfg.powBits))
		fmt.Fprintf(out, "proof of work: pow_bits %d, %.0f hashes expected: %.2f s for a human at %.0f hashes/s; %.3f s an identity for a bot operator at %.0f hashes/s, %.2f s for %d\n",
			cfg.powBits, expect, expect/cfg.humanHashes, cfg.humanHashes, expect/cfg.botHashes, cfg.botHashes, float64(cfg.botIDs)*expect/cfg.botHashes, cfg.botIDs)
		fmt.Fprintf(out, "here %d solvers do %.1f M hashes/s: about %.0f s of solving before each pow sale's opening (at most %.0f s can be done)\n",
			runtime.NumCPU(), b.hashRate/1e6, float64(cfg.shoppers)*expect/b.hashRate, b.maxPowLead().Seconds())
	}
	fmt.Fprintf(out, "server: seckill serve, shipped defaults (rate limits on: per_user 20/s burst 40), auth header, payment trusted, worker.sku_refresh 200ms%s\n\n", b.tunedNote())

	began := time.Now()
	var results []outcome
	skipped := map[mode]int{}
	for i := range cfg.runs {
		var these []mode
		for _, m := range modes {
			if chosen[m] && (m != modePow || b.powRun(i)) {
				these = append(these, m)
			}
		}
		for k := range these {
			m := these[(i+k)%len(these)] // each mode first in turn
			o, err := b.sale(i+1, m)
			if err != nil {
				return fmt.Errorf("run %d (%s): %w\nserver log tail:\n%s", i+1, m, err, tail(server.log, 20))
			}
			b.printRun(out, o)
			if o.skipped == "" {
				results = append(results, o)
			} else {
				skipped[m]++
			}
		}
	}

	verified := b.verify()
	fmt.Fprintf(out, "\n%d runs in %s; load at end: %s\n\n", cfg.runs, time.Since(began).Round(time.Second), loadavg())
	good := b.table(out, results, skipped, verified)
	if errLines := errorLines(server.log, 20); errLines != "" {
		fmt.Fprintf(out, "\nserver log (%s), error lines:\n%s\n", server.log, errLines)
	}
	if !good {
		return errors.New("a check failed (see the table)")
	}
	ok = true
	return nil
}

func newClient(conns int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxConnsPerHost: conns, MaxIdleConnsPerHost: conns, MaxIdleConns: conns,
		IdleConnTimeout: 90 * time.Second, DisableCompression: true,
	}}
}

func (b *bench) botPct() float64 { return 100 * float64(b.cfg.bots) / float64(b.cfg.shoppers) }

func (b *bench) tunedNote() string {
	if b.cfg.serveEnv == "" {
		return ""
	}
	return "; tuned: " + b.cfg.serveEnv
}

// powRun reports whether run i (from 0) has a pow sale: -pow-runs of the
// runs, spread evenly among them.
func (b *bench) powRun(i int) bool {
	p, n := min(b.cfg.powRuns, b.cfg.runs), b.cfg.runs
	return p > 0 && (i+1)*p/n > i*p/n
}
