package chaostest

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testutil"
)

const (
	adminToken = "chaostest-admin-token-0123456789abcdef"
	// jwtSecret is the HS256 key of the lanes that identify shoppers by
	// JWT; otherSecret signs the tokens they must refuse.
	jwtSecret   = "chaostest-jwt-secret-0123456789abcdef0123"
	otherSecret = "chaostest-not-the-secret-0123456789abcdef"
	// defaultDuration is the length of the run when SECKILL_CHAOS_DURATION
	// is not set: short enough for `go test ./...`.
	defaultDuration = 15 * time.Second
	// requestTimeout is the client's limit on one request.
	requestTimeout = 4 * time.Second
	// tidbRequestTimeout is that limit on TiDB, where on this loaded
	// machine (nine servers, three lanes and TiDB on two cores) stock
	// changes, cancels and payments take 4 s and more. Each request the
	// client stops waiting for is an operation of unknown outcome, and
	// enough of them leave a segment's linearizability undecided.
	tidbRequestTimeout = 15 * time.Second
	// paymentTimeout is order.payment_timeout of the run: short, so unpaid
	// orders expire and their units return while it runs.
	paymentTimeout = 3 * time.Second
	// redisTimeout is the read and write timeout of the servers' Redis
	// client, short so that a frozen Redis makes calls time out.
	redisTimeout = 300 * time.Millisecond
	instances    = 3
	users        = 120
)

// runSeed is the seed of the run, for messages printed far from the test.
var runSeed int64

// settings are the run's parameters from the environment.
type settings struct {
	seed     int64
	duration time.Duration
}

func loadSettings(t *testing.T) settings {
	t.Helper()
	s := settings{duration: defaultDuration}
	if v := strings.TrimSpace(os.Getenv("SECKILL_CHAOS_DURATION")); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "SECKILL_CHAOS_DURATION")
		require.Positive(t, d, "SECKILL_CHAOS_DURATION")
		s.duration = d
	}
	if v := strings.TrimSpace(os.Getenv("SECKILL_CHAOS_SEED")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, "SECKILL_CHAOS_SEED")
		s.seed = n
	} else if os.Getenv("CI") == "true" {
		// CI's verdict depends on the code, not on a seed drawn that day.
		s.seed = ciSeed
	} else {
		s.seed = time.Now().UnixNano() % 1_000_000_000
	}
	return s
}

// TestChaos is the randomized fault run: see the package comment and
// docs/design/faults.md. Three deployments ("lanes") run side by side, each with
// its own Redis, database, seckill processes, shoppers and faults: a
// standalone Redis without persistence, a Redis Cluster with SKUs split
// into stock buckets, and a Sentinel set with two replicas and
// redis.wait_replicas 1. The schedule of every lane's operations and faults
// follows from the seed; the timing of the processes does not, so a seed
// reproduces the same kind of run, not the same interleaving.
func TestChaos(t *testing.T) {
	testutil.SkipShort(t, "TestChaos starts seckill and redis-server processes; it does not run with -short")
	s := loadSettings(t)
	runSeed = s.seed
	repro := fmt.Sprintf("SECKILL_CHAOS_SEED=%d SECKILL_CHAOS_DURATION=%s", s.seed, s.duration)
	t.Logf("chaos: seed %d, duration %s, servers with race detector: %v (reproduce with %s)", s.seed, s.duration, serverRace(), repro)
	fmt.Fprintf(os.Stderr, "chaos: seed %d, duration %s\n", s.seed, s.duration)

	runStart = time.Now()
	rng := rand.New(rand.NewSource(s.seed))
	var lanes []*lane
	for _, spec := range laneSpecs {
		lanes = append(lanes, newLane(t, s, spec, rng.Int63()))
	}
	startAll(t, lanes)
	var wg sync.WaitGroup
	for _, l := range lanes {
		wg.Go(l.run)
	}
	wg.Wait()
	var lins [][]linResult
	for _, l := range lanes {
		lins = append(lins, l.analyze())
	}
	n := totals(t, lanes, lins)
	if n > 0 {
		// Also on stderr, which go test prints ahead of the test's long
		// log: a CI excerpt that keeps a log's head and tail shows them.
		for _, l := range lanes {
			for i, v := range l.viol.all() {
				if i < 10 {
					fmt.Fprintf(os.Stderr, "chaos violation: lane %s [%s] %s\n", l.spec.name, v.kind, v.msg)
				}
			}
		}
		t.Errorf("chaos: %d violation(s); seed %d; reproduce with %s", n, s.seed, repro)
	}
}

// violations are the broken promises a lane found.
type violations struct {
	mu   sync.Mutex
	list []violation
}

// violation is one broken promise; sku is the SKU it concerns (0: none in
// particular).
type violation struct {
	kind, msg string
	sku       uint64
}

func (v *violations) add(kind, format string, args ...any) {
	v.addSKU(0, kind, format, args...)
}

func (v *violations) addSKU(sku uint64, kind, format string, args ...any) {
	v.mu.Lock()
	v.list = append(v.list, violation{kind: kind, msg: fmt.Sprintf(format, args...), sku: sku})
	v.mu.Unlock()
}

func (v *violations) all() []violation {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]violation(nil), v.list...)
}

// ciSeed is the seed with CI=true when none is given (also the CI step's).
const ciSeed = 20261111
