// Command fairbench measures how fair a flash sale is to humans when bots
// join it: the bots' share of the units, with and without the SKU's waiting
// room, against one `seckill serve` over real HTTP (real Redis and MariaDB,
// the shipped defaults, rate limits on).
//
// Each run creates a fresh SKU (-units units, per_user_limit 1) per mode and
// lets -shoppers shoppers at it, -bots of them bots:
//
//   - with the room (random mode, -admit per second, pass_ttl -pass-ttl,
//     overbook -overbook), the room opens -window before the sale starts.
//     Bots join the instant it opens, then look at their place -speedup
//     times as often as Retry-After says (at least every -bot-min), and buy
//     at once when admitted. Humans arrive uniformly spread over the window,
//     join, look again when retry_after_ms says, and buy a moment
//     (-human-min to -human-max) after being admitted.
//   - without it, the SKU starts -window after the same moment. Bots buy
//     from the start, retrying every -bot-min (-speedup times the humans'
//     rate); humans arrive over the window and buy a moment (-human-min to
//     -human-max) after the start, retrying as Retry-After says.
//
// Units are counted per class from the 202 answers, checked against the
// orders in MySQL after the drain; with the room, the published draw is
// checked too (its seed against the commitment published before the start,
// and the buyers against the head of the line it gives). At the end every
// SKU is checked with `seckill verify`, and a markdown table gives the bots'
// share of units per mode (median and range over the runs).
//
//	cd bench && go run ./fairbench                # 20 runs per mode
//	cd bench && go run ./fairbench -runs 3
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
	flag.DurationVar(&cfg.window, "window", 5*time.Second, "pre-queue window: from the room's opening (and the bots' and humans' first arrivals) to the start")
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
	flag.StringVar(&cfg.modes, "modes", "room,none", "modes to run, comma-separated: room (with the waiting room), none (without)")
	flag.StringVar(&cfg.serveEnv, "serve-env", "", "comma-separated SECKILL_...=value settings added to the server (the rows are then labelled tuned)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the database and the work directory (logs)")
	flag.Float64Var(&cfg.tolerate, "goal", 3, "the goal: with the room, the bots' median share of units within this many points of their share of shoppers")
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
}

// outcome is one sale's result.
type outcome struct {
	run      int
	room     bool
	botUnits int64
	humUnits int64
	sqlBots  int64
	sqlHums  int64
	sqlOther int64
	timedOut bool
	soldOut  time.Duration
	late     [2]int // late joiners: bots, humans
	notIn    [2]int // shoppers who never got a ticket
	drawNote string
	drawOK   bool
	fivexx   int
	errs     int
	answers  [2]string // bots', humans'
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
	case cfg.runs <= 0 || cfg.units <= 0 || cfg.speedup <= 0:
		return errors.New("-runs, -units and -speedup must be positive")
	}
	modes := map[string]bool{}
	for _, m := range strings.Split(cfg.modes, ",") {
		if m != "room" && m != "none" {
			return fmt.Errorf("-modes: unknown mode %q (room, none)", m)
		}
		modes[m] = true
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
	fmt.Fprintln(out, "a sale's shoppers start no new request once its units are all sold (202s counted)")
	fmt.Fprintf(out, "server: seckill serve, shipped defaults (rate limits on: per_user 20/s burst 40), auth header, payment trusted, worker.sku_refresh 200ms%s\n\n", b.tunedNote())

	began := time.Now()
	var results []outcome
	for i := range cfg.runs {
		order := []bool{true, false}
		if i%2 == 1 {
			order = []bool{false, true}
		}
		for _, room := range order {
			if (room && !modes["room"]) || (!room && !modes["none"]) {
				continue
			}
			o, err := b.sale(i+1, room)
			if err != nil {
				return fmt.Errorf("run %d (%s): %w\nserver log tail:\n%s", i+1, modeName(room), err, tail(server.log, 20))
			}
			results = append(results, o)
			b.printRun(out, o)
		}
	}

	verified := b.verify()
	fmt.Fprintf(out, "\n%d runs of each mode in %s; load at end: %s\n\n", cfg.runs, time.Since(began).Round(time.Second), loadavg())
	good := b.table(out, results, verified)
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

func modeName(room bool) string {
	if room {
		return "waiting room"
	}
	return "no room"
}
