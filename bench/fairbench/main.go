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
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
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
	"sort"
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

// sale runs one sale of run in one mode.
func (b *bench) sale(run int, room bool) (outcome, error) {
	cfg := b.cfg
	opens := time.Now().UTC().Add(cfg.lead).Truncate(time.Millisecond)
	starts := opens.Add(cfg.window)
	mode := "none"
	if room {
		mode = "room"
	}
	s := &sale{b: b, room: room, opens: opens, starts: starts, units: cfg.units, stop: make(chan struct{})}
	id, err := b.createSKU(fmt.Sprintf("fairbench run %d %s", run, mode), opens, starts, room)
	if err != nil {
		return outcome{}, err
	}
	s.id = id
	b.skus = append(b.skus, id)
	// The room publishes its seed's SHA-256 from its opening, the seed
	// from the start: read the commitment in between.
	var commit chan error
	if room {
		commit = make(chan error, 1)
		go func() {
			time.Sleep(time.Until(opens.Add(cfg.window / 10)))
			var err error
			s.seedSHA, err = b.seedCommitment(id)
			commit <- err
		}()
	}
	if late := time.Since(opens); late > 0 {
		return outcome{}, fmt.Errorf("creating the SKU took past its opening by %s: raise -lead", late)
	}
	s.shoppers = make([]shopper, cfg.shoppers)
	for i := range s.shoppers {
		sh := &s.shoppers[i]
		sh.bot = i < cfg.bots
		kind := 'h'
		if sh.bot {
			kind = 'b'
		}
		sh.user = fmt.Sprintf("fb%s-r%d-%s-%c%05d", b.tag, run, mode, kind, i)
	}
	o := outcome{run: run, room: room}
	o.timedOut = s.shop(cfg.timeout)
	if commit != nil {
		if err := <-commit; err != nil {
			return o, err
		}
	}
	if d := s.soldOut.Load(); d > 0 {
		o.soldOut = time.Duration(d)
	}
	for _, sh := range s.shoppers {
		c := 1
		if sh.bot {
			c = 0
		}
		if sh.won {
			if sh.bot {
				o.botUnits++
			} else {
				o.humUnits++
			}
		}
		if room && !sh.joined {
			o.notIn[c]++
		}
		if sh.late {
			o.late[c]++
		}
	}
	for i := range s.tallies {
		o.fivexx += s.tallies[i].fivexx
		o.errs += s.tallies[i].errs
	}
	if err := b.drained(id, o.total(), 2*time.Minute); err != nil {
		return o, err
	}
	if err := b.sqlCount(id, &o); err != nil {
		return o, err
	}
	if room {
		o.drawOK, o.drawNote = b.checkDraw(s)
	}
	o.answers = [2]string{s.tallies[0].String(), s.tallies[1].String()}
	return o, nil
}

// createSKU creates the sale's SKU and returns its id.
func (b *bench) createSKU(name string, opens, starts time.Time, room bool) (int64, error) {
	ends := starts.Add(time.Hour)
	body := map[string]any{
		"name": name, "price_cents": 9900, "stock": b.cfg.units, "per_user_limit": 1,
		"starts_at": starts.Format(time.RFC3339Nano), "ends_at": ends.Format(time.RFC3339Nano),
	}
	if room {
		body["waiting_room"] = map[string]any{
			"opens_at": opens.Format(time.RFC3339Nano), "mode": "random",
			"admit_per_second": b.cfg.admit, "pass_ttl": b.cfg.passTTL.String(), "overbook": b.cfg.overbook,
		}
	}
	var v struct {
		ID int64 `json:"id"`
	}
	status, data, err := b.adminDo(http.MethodPost, "/admin/skus", body, &v)
	if err != nil {
		return 0, err
	}
	if status != http.StatusCreated || v.ID == 0 {
		return 0, fmt.Errorf("POST /admin/skus: %d %s", status, data)
	}
	return v.ID, nil
}

// seedCommitment is the room's seed_sha256 as the SKU's public view gives
// it between the room's opening and the start (when it must not give the
// seed).
func (b *bench) seedCommitment(id int64) (string, error) {
	var v struct {
		WaitingRoom *struct {
			SeedSHA256 string `json:"seed_sha256"`
			Seed       string `json:"seed"`
		} `json:"waiting_room"`
	}
	status, data, err := b.adminDo(http.MethodGet, fmt.Sprintf("/api/v1/skus/%d", id), nil, &v)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK || v.WaitingRoom == nil || v.WaitingRoom.SeedSHA256 == "" {
		return "", fmt.Errorf("GET /api/v1/skus/%d: %d %s: no waiting_room.seed_sha256", id, status, data)
	}
	if v.WaitingRoom.Seed != "" {
		return "", fmt.Errorf("GET /api/v1/skus/%d before the start gives the seed: %s", id, data)
	}
	return v.WaitingRoom.SeedSHA256, nil
}

// adminDo sends a request with the admin token and decodes a JSON answer
// into v (if not nil).
func (b *bench) adminDo(method, path string, body, v any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, b.url+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.admin.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	if v != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, v); err != nil {
			return resp.StatusCode, data, fmt.Errorf("%s %s: %w: %s", method, path, err, data)
		}
	}
	return resp.StatusCode, data, nil
}

// drained waits until nothing of the SKU is queued, its audit is
// consistent and SQL holds orders orders.
func (b *bench) drained(id, orders int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var r struct {
			Orders       int64 `json:"orders"`
			Queued       int64 `json:"queued"`
			QueuedOrders int64 `json:"queued_orders"`
			Consistent   bool  `json:"consistent"`
		}
		status, data, err := b.adminDo(http.MethodGet, fmt.Sprintf("/admin/skus/%d/audit", id), nil, &r)
		if err == nil && status == http.StatusOK && r.Queued == 0 && r.QueuedOrders == 0 && r.Consistent && r.Orders >= orders {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("sku %d not drained in %s (want %d orders): %d %s", id, timeout, orders, status, data)
			}
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sqlCount counts the SKU's orders in MySQL by class of shopper.
func (b *bench) sqlCount(id int64, o *outcome) error {
	rows, err := b.db.Query("SELECT user_id FROM orders WHERE sku_id = ?", id)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return err
		}
		switch i := strings.LastIndexByte(u, '-'); {
		case i >= 0 && strings.HasPrefix(u[i+1:], "b"):
			o.sqlBots++
		case i >= 0 && strings.HasPrefix(u[i+1:], "h"):
			o.sqlHums++
		default:
			o.sqlOther++
		}
	}
	return rows.Err()
}

// checkDraw ends the sale, reads its published draw and checks it: the
// seed against the commitment published before the start, every ticket
// ours, and the buyers the head of the line the draw gives.
func (b *bench) checkDraw(s *sale) (bool, string) {
	if status, data, err := b.adminDo(http.MethodPost, fmt.Sprintf("/admin/skus/%d/end", s.id), nil, nil); err != nil || status != http.StatusOK {
		return false, fmt.Sprintf("POST /admin/skus/%d/end: %d %s %v", s.id, status, data, err)
	}
	var d struct {
		Mode       string   `json:"mode"`
		Seed       string   `json:"seed"`
		SeedSHA256 string   `json:"seed_sha256"`
		PreQueue   []string `json:"pre_queue"`
		Later      []string `json:"later"`
	}
	var status int
	var data []byte
	var err error
	for range 50 { // the end reaches the catalog cache at once here; a few tries in case
		status, data, err = b.adminDo(http.MethodGet, fmt.Sprintf("/api/v1/skus/%d/draw", s.id), nil, &d)
		if err != nil || status != http.StatusConflict {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || status != http.StatusOK {
		return false, fmt.Sprintf("GET /api/v1/skus/%d/draw: %d %.200s %v", s.id, status, data, err)
	}
	sum := sha256.Sum256([]byte(d.Seed))
	if hex.EncodeToString(sum[:]) != d.SeedSHA256 || d.SeedSHA256 != s.seedSHA {
		return false, fmt.Sprintf("seed %s: its SHA-256 is not the commitment %s published before the start (the draw says %s)", d.Seed, s.seedSHA, d.SeedSHA256)
	}
	type keyed struct{ key, ticket string }
	pre := make([]keyed, len(d.PreQueue))
	for i, t := range d.PreQueue {
		k := sha256.Sum256([]byte(d.Seed + ":" + t))
		pre[i] = keyed{hex.EncodeToString(k[:]), t}
	}
	sort.Slice(pre, func(i, j int) bool { return pre[i].key < pre[j].key })
	line := make([]string, 0, len(pre)+len(d.Later))
	for _, k := range pre {
		line = append(line, k.ticket)
	}
	line = append(line, d.Later...)
	who := map[string]*shopper{}
	joined := 0
	for i := range s.shoppers {
		if sh := &s.shoppers[i]; sh.joined {
			who[sh.ticket] = sh
			joined++
		}
	}
	if len(line) != joined {
		return false, fmt.Sprintf("the draw has %d tickets (%d pre-queue, %d later); %d shoppers joined", len(line), len(d.PreQueue), len(d.Later), joined)
	}
	// Passes go out in line order, at most units x overbook at a time
	// (fewer as units sell): every buyer is within the first
	// floor(units x overbook) places; with overbook 1 the buyers are the
	// head of the line.
	n := int(s.accepted.Load())
	limit := min(int(math.Floor(float64(s.units)*b.cfg.overbook+1e-9)), len(line))
	for i, t := range line {
		sh := who[t]
		switch {
		case sh == nil:
			return false, fmt.Sprintf("ticket %s of the draw is not a shopper's", t)
		case sh.won && i >= limit:
			return false, fmt.Sprintf("%s bought from place %d of the line, behind the first %d", sh.user, i+1, limit)
		case !sh.won && i < n && limit == int(s.units):
			return false, fmt.Sprintf("place %d of the line (%s) did not buy, while someone further back did", i+1, sh.user)
		}
	}
	return true, fmt.Sprintf("draw ok: the seed matches its commitment; the %d buyers are within the first %d places of the line (%d pre-queue, %d later)", n, limit, len(d.PreQueue), len(d.Later))
}

func (b *bench) printRun(out io.Writer, o outcome) {
	fmt.Fprintf(out, "run %d, %s: bots %d of %d units (%.1f%%), humans %d", o.run, modeName(o.room), o.botUnits, o.total(), o.botShare(), o.humUnits)
	if o.soldOut > 0 {
		fmt.Fprintf(out, "; sold out %.2fs after the start", o.soldOut.Seconds())
	} else {
		fmt.Fprintf(out, "; NOT sold out")
	}
	if o.timedOut {
		fmt.Fprintf(out, " (stopped after -run-timeout)")
	}
	fmt.Fprintf(out, "; SQL: %d bots, %d humans", o.sqlBots, o.sqlHums)
	if o.sqlOther > 0 {
		fmt.Fprintf(out, ", %d others", o.sqlOther)
	}
	if o.room {
		fmt.Fprintf(out, "; joined after the draw: %d bots, %d humans; never joined: %d bots, %d humans; %s", o.late[0], o.late[1], o.notIn[0], o.notIn[1], o.drawNote)
	}
	if o.fivexx > 0 || o.errs > 0 {
		fmt.Fprintf(out, "; %d 5xx, %d transport errors", o.fivexx, o.errs)
	}
	fmt.Fprintf(out, "\n    bots' answers: %s\n    humans' answers: %s\n", o.answers[0], o.answers[1])
}

// table prints the summary and the checks; false if one failed.
func (b *bench) table(out io.Writer, results []outcome, verified string) bool {
	good := true
	fmt.Fprintf(out, "%d shoppers (%d bots = %.1f%%), %d units per run%s\n\n", b.cfg.shoppers, b.cfg.bots, b.botPct(), b.cfg.units, b.tunedNote())
	fmt.Fprintln(out, "| mode | runs | bots' share of units: median (min–max) | humans' share: median (min–max) | bots' units, all runs | goal |")
	fmt.Fprintln(out, "|---|---:|---|---|---|---|")
	var checks []string
	for _, room := range []bool{true, false} {
		var shares []float64
		var botU, allU int64
		runs := 0
		for _, o := range results {
			if o.room != room {
				continue
			}
			runs++
			botU += o.botUnits
			allU += o.total()
			if o.total() > 0 {
				shares = append(shares, o.botShare())
			}
		}
		if runs == 0 {
			continue
		}
		name := "no waiting room"
		goal := "— (measured)"
		med := median(shares)
		if room {
			name = fmt.Sprintf("waiting room (random, %d/s, pass_ttl %s, overbook %g)", b.cfg.admit, b.cfg.passTTL, b.cfg.overbook)
			met := len(shares) == runs && math.Abs(med-b.botPct()) <= b.cfg.tolerate
			goal = fmt.Sprintf("median within %.0f%% ± %.0f points: %s", b.botPct(), b.cfg.tolerate, yes(met))
		}
		if b.cfg.serveEnv != "" {
			name += ", tuned"
		}
		humans := make([]float64, len(shares))
		for i, v := range shares {
			humans[i] = 100 - v
		}
		fmt.Fprintf(out, "| %s | %d | %s | %s | %d of %d (%.1f%%) | %s |\n", name, runs, spread(shares), spread(humans), botU, allU, pct(botU, allU), goal)
	}
	fmt.Fprintln(out)
	if b.cfg.bots > 0 && b.cfg.bots < b.cfg.shoppers {
		// The bots' share of a fair draw of units from shoppers:
		// hypergeometric.
		n, N, p := float64(b.cfg.units), float64(b.cfg.shoppers), float64(b.cfg.bots)/float64(b.cfg.shoppers)
		if n < N {
			sd := 100 * math.Sqrt(p*(1-p)*(N-n)/(N-1)/n)
			fmt.Fprintf(out, "a fair draw of %d units among these shoppers gives the bots %.1f%% ± %.1f points (1 sd) per run; the median of %d runs ± about %.1f\n\n",
				b.cfg.units, 100*p, sd, b.cfg.runs, 1.25*sd/math.Sqrt(float64(b.cfg.runs)))
		}
	}
	fivexx, errs, sqlBad, drawBad, notSold := 0, 0, 0, 0, 0
	for _, o := range results {
		fivexx += o.fivexx
		errs += o.errs
		if o.sqlBots != o.botUnits || o.sqlHums != o.humUnits || o.sqlOther != 0 {
			sqlBad++
		}
		if o.room && !o.drawOK {
			drawBad++
		}
		if o.total() != b.cfg.units {
			notSold++
		}
	}
	add := func(target, got string, ok bool) {
		checks = append(checks, fmt.Sprintf("| %s | %s | %s |", target, got, yes(ok)))
		good = good && ok
	}
	add("every sale sold all its units to the shoppers", fmt.Sprintf("%d of %d sales not", notSold, len(results)), notSold == 0)
	add("the 202s counted per class = the orders in MySQL per class", fmt.Sprintf("%d of %d sales differ", sqlBad, len(results)), sqlBad == 0)
	add("room: the published draw checks out (seed vs commitment; the buyers are the head of the line)", fmt.Sprintf("%d sales failed", drawBad), drawBad == 0)
	add("no 5xx answers, no transport errors", fmt.Sprintf("%d 5xx, %d transport errors", fivexx, errs), fivexx == 0 && errs == 0)
	add("seckill verify: every SKU consistent", verified, strings.HasPrefix(verified, "ok"))
	fmt.Fprintln(out, "| check | measured | met |")
	fmt.Fprintln(out, "|---|---|---|")
	for _, c := range checks {
		fmt.Fprintln(out, c)
	}
	return good
}

func pct(a, b int64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return 100 * float64(a) / float64(b)
}

func spread(v []float64) string {
	if len(v) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%% (%.1f–%.1f)", median(v), slices.Min(v), slices.Max(v))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// verify runs `seckill verify` on every SKU of the benchmark.
func (b *bench) verify() string {
	args := []string{"verify"}
	for _, id := range b.skus {
		args = append(args, "--sku", strconv.FormatInt(id, 10))
	}
	cmd := exec.Command(b.bin, args...) //nolint:gosec // the seckill binary this program built
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SECKILL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, b.env...)
	o, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(o)), "\n")
	last := lines[len(lines)-1]
	if err != nil {
		return "FAILED: " + last
	}
	return "ok: " + last
}

// errorLines are up to n lines of the log at level warn or error.
func errorLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var out []string
	total := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"level":"ERROR"`) || strings.Contains(line, `"level":"WARN"`) {
			total++
			if len(out) < n {
				out = append(out, line)
			}
		}
	}
	if total > len(out) {
		out = append(out, fmt.Sprintf("... %d such lines in all", total))
	}
	return strings.Join(out, "\n")
}
