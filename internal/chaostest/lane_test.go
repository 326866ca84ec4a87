package chaostest

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/rand"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/auth"
	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
	"github.com/seckill/seckill/migrations"
)

// Lane names: the Redis deployment a lane runs on.
const (
	laneStandalone = "standalone"
	laneCluster    = "cluster"
	laneSentinel   = "sentinel"
)

// laneSpec describes one lane of the run.
type laneSpec struct {
	name     string
	shoppers int  // concurrent shopper goroutines
	jwt      bool // shoppers identified by HS256 tokens instead of X-User-ID
	// waitReplicas is redis.wait_replicas: with 1, no order answered 202
	// may be lost, whatever the failover.
	waitReplicas int
	// buckets are the stock bucket counts of the lane's SKUs, one SKU
	// each; extra SKUs (up to maxSKUs) draw theirs from the same list.
	buckets []int
	maxSKUs int
	// faults are the kinds the lane injects (faults_test.go).
	faults []string
}

// laneSpecs are the lanes every run has, side by side.
var laneSpecs = []laneSpec{
	{name: laneStandalone, shoppers: 8, buckets: []int{1, 1, 1}, maxSKUs: 4,
		faults: []string{faultRedisFreeze, faultProcKill, faultProcStop, faultDrainHeld, faultDeadLetters, faultRedisFlush, faultRedisRestart}},
	{name: laneCluster, shoppers: 8, jwt: true, waitReplicas: 1, buckets: []int{1, 3, 6}, maxSKUs: 3,
		faults: []string{faultMasterFreeze, faultProcKill, faultProcStop, faultDrainHeld, faultDeadLetters, faultMasterKill}},
	{name: laneSentinel, shoppers: 8, jwt: true, waitReplicas: 1, buckets: []int{1, 3}, maxSKUs: 3,
		faults: []string{faultPrimaryFreeze, faultProcKill, faultProcStop, faultDrainHeld, faultDeadLetters, faultPrimaryKill, faultSentinelFailover}},
}

// lane is one deployment of the run and everything it recorded: its
// Redis (standalone, Cluster or Sentinel set), its database, its seckill
// processes, shoppers, admin and faults.
type lane struct {
	t      *testing.T
	spec   laneSpec
	s      settings
	rng    *rand.Rand // the lane's schedule: phases and the seeds of the actors
	env    map[string]string
	events *eventSink // the receiver of the order events
	prefix string
	db     *sql.DB
	rdb    redis.UniversalClient // inspection of the lane's Redis
	procs  []*proc
	cl     *client
	hist   *history
	skus   []*skuInfo
	users  *userPool
	viol   *violations
	ret    *returnWatch

	// The Redis deployment: one of these.
	redis     *testsvc.RedisServer   // standalone
	rc        *testsvc.RedisCluster  // Cluster
	sentinels *testsvc.SentinelSet   // Sentinel set
	sentNodes []*testsvc.RedisServer // its primary and replicas

	tokens  sync.Map // user -> a valid token (jwt lanes)
	clients sync.Map // address -> *redis.Client of a Sentinel set's node

	snaps  []*snapshot // one per barrier, the first after seeding
	phases []phase
	rss    map[string][2]int64 // process -> RSS at start and end, KiB
	// injected counts the faults of each kind so far, so that a run
	// injects every kind of its lane early (see inject).
	injected map[string]int
	// dead are the dead letters the run listed, by task id.
	deadMu sync.Mutex
	dead   map[string]*deadLetter
	// repairs are what a barrier found and reconciled without a
	// violation: units a failover or a stuck move took off sale.
	repairs []string
	// holds are the periods the test held every SKU row in MySQL
	// (holdDrain): a close begun in one commits, and gives its units back,
	// only after it.
	holdMu sync.Mutex
	holds  []span
}

// skuInfo is a SKU of a lane.
type skuInfo struct {
	id      uint64
	limit   int
	buckets int
	stock   int64 // initial stock_total
	spec    map[string]any
	mu      sync.Mutex
	total   int64 // the stock_total the admin last set
	// pendingTotal is a stock change that got no clear answer yet (0:
	// none), with its kind; the barrier sends it again.
	pendingTotal int64
	pendingKind  string
	// pendingReconcile is a reconcile answered other than 200, or not at
	// all: the barrier sends it again until it succeeds, as an operator
	// would (a rebuild stopped part-way undersells until one does).
	pendingReconcile bool
}

// phase is a stretch of workload and faults between two barriers.
type phase struct {
	n        int
	from, to time.Time
}

// newLane starts the lane's Redis and database and prepares its seckill
// processes (startAll starts them).
func newLane(t *testing.T, s settings, spec laneSpec, seed int64) *lane {
	t.Helper()
	l := &lane{
		t: t, spec: spec, s: s, rng: rand.New(rand.NewSource(seed)), prefix: testsvc.Prefix(t),
		hist: &history{}, viol: &violations{}, rss: map[string][2]int64{},
		injected: map[string]int{}, dead: map[string]*deadLetter{},
	}
	dsn := testsvc.MySQL(t)
	var addrs string
	switch spec.name {
	case laneStandalone:
		l.redis = testsvc.StartRedisServer(t)
		addrs = l.redis.Addr()
		l.rdb = redis.NewClient(&redis.Options{Addr: addrs, ReadTimeout: time.Second, WriteTimeout: time.Second, DialTimeout: time.Second, MaxRetries: -1})
	case laneCluster:
		l.rc = testsvc.StartRedisCluster(t)
		addrs = l.rc.Addrs()
		l.rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","), ReadTimeout: time.Second, WriteTimeout: time.Second, DialTimeout: 500 * time.Millisecond})
	case laneSentinel:
		primary := testsvc.StartRedisServer(t, testsvc.Replicated...)
		_, port, _ := strings.Cut(primary.Addr(), ":")
		l.sentNodes = []*testsvc.RedisServer{primary}
		for range 2 {
			l.sentNodes = append(l.sentNodes, testsvc.StartRedisServer(t, append([]string{"--replicaof", "127.0.0.1", port}, testsvc.Replicated...)...))
		}
		testsvc.WaitReplicas(t, primary.Client(), 2, 20*time.Second)
		name := "chaos-" + testsvc.RandomID(3)
		l.sentinels = testsvc.StartSentinelSet(t, name, primary.Addr(), 2)
		addrs = l.sentinels.Addrs()
		l.rdb = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: name, SentinelAddrs: strings.Split(addrs, ","),
			ReadTimeout: time.Second, WriteTimeout: time.Second, DialTimeout: 500 * time.Millisecond})
	default:
		t.Fatalf("unknown lane %q", spec.name)
	}
	t.Cleanup(func() { _ = l.rdb.Close() })
	l.env = testutil.RecoveryEnv(addrs, l.prefix, dsn, adminToken)
	maps.Copy(l.env, map[string]string{
		"SECKILL_REDIS_READ_TIMEOUT":  redisTimeout.String(),
		"SECKILL_REDIS_WRITE_TIMEOUT": redisTimeout.String(),
		"SECKILL_REDIS_DIAL_TIMEOUT":  "500ms",
		"SECKILL_REDIS_POOL_SIZE":     "32",
		// Nine processes share the test MariaDB (151 connections): at
		// the default 32 each they could ask for more than it has.
		"SECKILL_MYSQL_MAX_OPEN_CONNS":  "12",
		"SECKILL_MYSQL_MAX_IDLE_CONNS":  "4",
		"SECKILL_ORDER_PAYMENT_TIMEOUT": paymentTimeout.String(),
		// One delivery: a batch whose lease runs out (its process killed
		// or stopped while it held it) becomes a dead letter at once.
		"SECKILL_ORDER_MAX_ATTEMPTS": "1",
	})
	if spec.name == laneSentinel {
		l.env["SECKILL_REDIS_MASTER_NAME"] = l.sentinels.Name()
	}
	if spec.waitReplicas > 0 {
		l.env["SECKILL_REDIS_WAIT_REPLICAS"] = strconv.Itoa(spec.waitReplicas)
		// The machine runs every lane; 50ms is often too short for a
		// replica's acknowledgement there, and each miss is a 503.
		l.env["SECKILL_REDIS_WAIT_TIMEOUT"] = "150ms"
	}
	l.events = startEvents(l)
	if spec.jwt {
		l.env["SECKILL_AUTH_MODE"] = "jwt"
		l.env["SECKILL_AUTH_JWT_SECRET"] = jwtSecret
	}
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	l.db = db
	timeout := requestTimeout
	if migrateOnTiDB(t, db) {
		timeout = tidbRequestTimeout
	}
	l.cl = newClient(t, adminToken, timeout)
	if spec.jwt {
		l.cl.UserToken = l.token
	}
	t.Cleanup(l.cl.HTTP.CloseIdleConnections)
	for i := range instances {
		l.procs = append(l.procs, newProc(t, fmt.Sprintf("%s-%d", spec.name, i), l.env))
	}
	return l
}

// migrateOnTiDB migrates the lane's database before its servers start when
// the server is TiDB: there the DDL of the lanes' databases (and of any
// other test of the server) runs one job at a time, which on a loaded
// machine takes longer than a server's start is given. On MySQL the
// servers migrate it as they start, together. It reports whether the
// server is TiDB.
func migrateOnTiDB(t *testing.T, db *sql.DB) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	tidb, err := migrations.IsTiDB(ctx, db)
	require.NoError(t, err)
	if tidb {
		_, err = migrations.Up(ctx, db, migrations.MySQL)
		require.NoError(t, err, "migrate the lane's database")
	}
	return tidb
}

// token returns a valid token of user, minted once (valid for two hours:
// longer than any run).
func (l *lane) token(user string) string {
	if v, ok := l.tokens.Load(user); ok {
		return v.(string)
	}
	tok, err := auth.Mint(config.Auth{JWTSecret: jwtSecret, JWTUserClaim: "sub"}, user, 2*time.Hour, time.Now())
	if err != nil {
		panic(err)
	}
	l.tokens.Store(user, tok)
	return tok
}

// badToken returns a token the lane must refuse: expired (beyond the
// leeway) or signed with another key.
func badToken(kind, user string) string {
	var tok string
	var err error
	switch kind {
	case tokenExpired:
		tok, err = auth.Mint(config.Auth{JWTSecret: jwtSecret, JWTUserClaim: "sub"}, user, -time.Hour, time.Now())
	default:
		tok, err = auth.Mint(config.Auth{JWTSecret: otherSecret, JWTUserClaim: "sub"}, user, time.Hour, time.Now())
	}
	if err != nil {
		panic(err)
	}
	return tok
}

// Kinds of refused tokens, and the detail each must be answered with.
const (
	tokenExpired = "expired"
	tokenForged  = "forged"
)

var tokenDetail = map[string]string{
	tokenExpired: auth.ErrExpired.Detail,
	tokenForged:  auth.ErrSignature.Detail,
}

// startAll starts every lane's seckill processes, all at once.
func startAll(t *testing.T, lanes []*lane) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(lanes)*instances)
	for _, l := range lanes {
		for _, p := range l.procs {
			wg.Go(func() {
				if err := p.Start(90 * time.Second); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// run seeds the SKUs, then alternates phases of workload and faults with
// barriers until the duration is over.
func (l *lane) run() {
	t := l.t
	l.seedSKUs()
	l.ret = watchReturns(l)
	t.Cleanup(l.ret.stop)
	l.users = newUserPool(users)
	var rss []string
	for _, p := range l.procs {
		l.rss[p.Name] = [2]int64{p.RSSKiB(), 0}
		rss = append(rss, fmt.Sprintf("%s %d MiB", p.Name, l.rss[p.Name][0]>>10))
	}
	t.Logf("chaos %s: memory at start (VmRSS): %s", l.spec.name, strings.Join(rss, ", "))
	l.barrier(0, false, false)
	end := time.Now().Add(l.s.duration)
	for n := 1; ; n++ {
		left := time.Until(end)
		if left <= 0 {
			break
		}
		length := time.Duration(8+l.rng.Intn(7)) * time.Second
		if length > left || left-length < 4*time.Second {
			length = left
		}
		ph := phase{n: n, from: time.Now()}
		lost, failedOver := l.runPhase(n, length)
		ph.to = time.Now()
		l.phases = append(l.phases, ph)
		l.barrier(n, lost, failedOver)
	}
	l.ret.stop()
	l.events.check(l)
	for _, p := range l.procs {
		r := l.rss[p.Name]
		r[1] = p.RSSKiB()
		l.rss[p.Name] = r
	}
}

// seedSKUs creates the SKUs: small stocks, per-user limits of 1 to 3,
// the lane's bucket counts, on sale for the whole run.
func (l *lane) seedSKUs() {
	t := l.t
	now := time.Now().UTC()
	buckets := slices.Clone(l.spec.buckets)
	l.rng.Shuffle(len(buckets), func(i, j int) { buckets[i], buckets[j] = buckets[j], buckets[i] })
	for len(buckets) < l.spec.maxSKUs && l.rng.Intn(2) == 0 {
		buckets = append(buckets, l.spec.buckets[l.rng.Intn(len(l.spec.buckets))])
	}
	for i, b := range buckets {
		sku := &skuInfo{id: uint64(101 + i), limit: 1 + l.rng.Intn(3), stock: int64(5 + l.rng.Intn(46)), buckets: b}
		sku.total = sku.stock
		sku.spec = map[string]any{
			"id": sku.id, "name": fmt.Sprintf("chaos-%s-%d", l.spec.name, sku.id), "price_cents": 1000 + i,
			"per_user_limit": sku.limit,
			// The model counts what a shopper holds: a cancel or an expiry
			// gives their count back.
			"limit_counts_cancelled": false,
			"starts_at":              now.Add(-time.Minute).Format(time.RFC3339Nano),
			"ends_at":                now.Add(l.s.duration + 2*time.Hour).Format(time.RFC3339Nano),
		}
		body := map[string]any{"stock": sku.stock, "buckets": b}
		maps.Copy(body, sku.spec)
		deadline := time.Now().Add(30 * time.Second)
		for {
			o := &op{kind: opUpsert, sku: sku.id, total: sku.stock}
			l.cl.do(o, l.procs[0].URL(), "POST", "/admin/skus", body)
			if o.status == http.StatusCreated || o.status == http.StatusOK {
				break
			}
			// With wait_replicas a change not acknowledged in time is
			// answered 503; the upsert names its id, so it is sent again.
			require.True(t, o.status == http.StatusServiceUnavailable && time.Now().Before(deadline),
				"%s: seed sku %d: %s %s", l.spec.name, sku.id, o.raw, o.err)
			time.Sleep(200 * time.Millisecond)
		}
		l.skus = append(l.skus, sku)
		t.Logf("chaos %s: sku %d stock %d per-user limit %d buckets %d", l.spec.name, sku.id, sku.stock, sku.limit, b)
	}
}

func (l *lane) sku(id uint64) *skuInfo {
	for _, s := range l.skus {
		if s.id == id {
			return s
		}
	}
	return nil
}

// live returns the processes that run, for requests that must be answered.
func (l *lane) live() []*proc {
	var out []*proc
	for _, p := range l.procs {
		if p.Running() {
			out = append(out, p)
		}
	}
	return out
}

// logf logs a line of the lane.
func (l *lane) logf(format string, args ...any) {
	l.t.Logf("chaos %s: "+format, append([]any{l.spec.name}, args...)...)
}
