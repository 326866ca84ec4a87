// Command lockbench compares package lock (github.com/seckill/seckill/lock) with bsm/redislock and
// go-redsync/redsync on the same Redis in one run:
//
//   - uncontended: workers acquire and release their own lock in a loop;
//     ops/s (one op = acquire + release), median over several rounds;
//   - hand-off: waiters contend for one lock; the latency from the moment a
//     holder starts releasing to the moment another waiter's acquire returns,
//     p50 and p99.
//
// It prints a markdown table. Run it from bench/: go run ./lockbench
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/lock"
)

type config struct {
	addr        string
	rounds      int
	roundTime   time.Duration
	workers     int
	waiters     int
	handoffs    int
	handoffTime time.Duration
	hold        time.Duration
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "lockbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("lockbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := getenv("SECKILL_TEST_REDIS_ADDR")
	if def == "" {
		def = "127.0.0.1:6379"
	}
	fs.StringVar(&cfg.addr, "addr", def, "Redis address")
	fs.IntVar(&cfg.rounds, "rounds", 15, "uncontended rounds per library (median reported)")
	fs.DurationVar(&cfg.roundTime, "round-time", 500*time.Millisecond, "length of one uncontended round")
	fs.IntVar(&cfg.workers, "workers", 4, "uncontended workers, each on its own lock")
	fs.IntVar(&cfg.waiters, "waiters", 64, "goroutines contending for one lock in the hand-off test")
	fs.IntVar(&cfg.handoffs, "handoffs", 2000, "hand-offs to measure per library (at most)")
	fs.DurationVar(&cfg.handoffTime, "handoff-time", 15*time.Second, "time limit of the hand-off test per library")
	fs.DurationVar(&cfg.hold, "hold", 100*time.Microsecond, "time a holder keeps the lock in the hand-off test")
	if err := fs.Parse(args); err != nil {
		return err
	}

	rdb := redis.NewClient(&redis.Options{Addr: cfg.addr, PoolSize: cfg.waiters + cfg.workers + 8})
	defer func() { _ = rdb.Close() }()
	counter := &cmdCounter{}
	rdb.AddHook(counter)
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis %s: %w", cfg.addr, err)
	}
	prefix := fmt.Sprintf("lockbench:%d:", time.Now().UnixNano())
	defer cleanup(rdb, prefix)

	ours := lock.New(rdb, lock.WithPrefix(prefix+"lock:"))
	defer func() { _ = ours.Close() }()
	bsm := redislock.New(rdb)
	rs := redsync.New(goredis.NewPool(rdb))

	libs := []lib{
		{
			name: "seckill/lock",
			acquire: func(ctx context.Context, name string, wait bool) (func(context.Context) error, error) {
				var m *lock.Lease
				var err error
				if wait {
					m, err = ours.Lock(ctx, name, 10*time.Second)
				} else {
					m, err = ours.TryLock(ctx, name, 10*time.Second)
				}
				if err != nil {
					return nil, err
				}
				return m.Unlock, nil
			},
		},
		{
			name: "bsm/redislock",
			acquire: func(ctx context.Context, name string, wait bool) (func(context.Context) error, error) {
				opt := &redislock.Options{}
				if wait {
					// The same schedule as package lock's default backoff.
					opt.RetryStrategy = redislock.ExponentialBackoff(2*time.Millisecond, 128*time.Millisecond)
				}
				l, err := bsm.Obtain(ctx, prefix+"bsm:"+name, 10*time.Second, opt)
				if err != nil {
					return nil, err
				}
				return l.Release, nil
			},
		},
		{
			name: "redsync",
			acquire: func(ctx context.Context, name string, wait bool) (func(context.Context) error, error) {
				// Default retry delay: random 50–250 ms.
				m := rs.NewMutex(prefix+"redsync:"+name, redsync.WithExpiry(10*time.Second), redsync.WithTries(1<<20))
				var err error
				if wait {
					err = m.LockContext(ctx)
				} else {
					err = m.TryLockContext(ctx)
				}
				if err != nil {
					return nil, err
				}
				return func(ctx context.Context) error { _, err := m.UnlockContext(ctx); return err }, nil
			},
		},
	}

	type row struct {
		name           string
		opsMedian      float64
		opsAll         []float64
		p50, p99, max  time.Duration
		n              int
		cmdsPerHandoff float64
		allocs         float64
		ratio          float64
	}
	// Rounds are interleaved (A B C A B C ...) so that load from anything
	// else on the machine spreads over all libraries alike.
	ops := make([][]float64, len(libs))
	for r := range cfg.rounds {
		for i, l := range libs {
			v, err := uncontended(ctx, l, cfg, r)
			if err != nil {
				return fmt.Errorf("%s uncontended: %w", l.name, err)
			}
			ops[i] = append(ops[i], v)
			fmt.Fprintf(stderr, "round %d %-14s %8.0f ops/s\n", r+1, l.name, v)
		}
	}
	var rows []row
	for i, l := range libs {
		// Client-side allocations of one sequential acquire+release.
		var allocErr error
		allocs := testing.AllocsPerRun(2000, func() {
			release, err := l.acquire(ctx, "allocs", false)
			if err == nil {
				err = release(ctx)
			}
			allocErr = cmp(allocErr, err)
		})
		if allocErr != nil {
			return fmt.Errorf("%s allocs: %w", l.name, allocErr)
		}
		fmt.Fprintf(stderr, "%s: hand-off with %d waiters", l.name, cfg.waiters)
		before := counter.n.Load()
		lat, err := handoff(ctx, l, cfg)
		cmds := counter.n.Load() - before
		if err != nil {
			return fmt.Errorf("%s hand-off: %w", l.name, err)
		}
		fmt.Fprintf(stderr, ": %d samples\n", len(lat))
		slices.Sort(lat)
		sorted := slices.Clone(ops[i])
		slices.Sort(sorted)
		// Rounds of different libraries run back to back, so the ratio
		// within a round is steadier than the ratio of two medians.
		var ratios []float64
		for r := range ops[i] {
			ratios = append(ratios, ops[i][r]/ops[0][r])
		}
		slices.Sort(ratios)
		rows = append(rows, row{
			name: l.name, opsMedian: sorted[len(sorted)/2], opsAll: ops[i],
			p50: pct(lat, 50), p99: pct(lat, 99), max: pct(lat, 100), n: len(lat),
			cmdsPerHandoff: float64(cmds) / float64(max(1, len(lat))),
			allocs:         allocs,
			ratio:          ratios[len(ratios)/2],
		})
	}

	fmt.Fprintf(stdout, "| library | uncontended acquire+release ops/s (median of %d × %s, %d workers) | ops/s relative to %s (median of per-round ratios) | allocs per acquire+release | hand-off p50 | hand-off p99 | hand-off max | Redis commands per hand-off | hand-offs measured (%d waiters) |\n",
		cfg.rounds, cfg.roundTime, cfg.workers, libs[0].name, cfg.waiters)
	fmt.Fprintln(stdout, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintf(stdout, "| %s | %.0f | %.2f | %.0f | %s | %s | %s | %.1f | %d |\n", r.name, r.opsMedian, r.ratio, r.allocs, ms(r.p50), ms(r.p99), ms(r.max), r.cmdsPerHandoff, r.n)
	}
	return nil
}

type lib struct {
	name string
	// acquire takes the lock called name (waiting when wait is set) and
	// returns its release function.
	acquire func(ctx context.Context, name string, wait bool) (func(context.Context) error, error)
}

// uncontended runs cfg.workers goroutines, each acquiring and releasing its
// own lock for cfg.roundTime, and returns the total ops/s.
func uncontended(ctx context.Context, l lib, cfg config, round int) (float64, error) {
	var total atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, cfg.workers)
	start := time.Now()
	deadline := start.Add(cfg.roundTime)
	for w := range cfg.workers {
		name := fmt.Sprintf("u:%d:%d", round, w)
		wg.Go(func() {
			n := int64(0)
			for time.Now().Before(deadline) {
				release, err := l.acquire(ctx, name, false)
				if err != nil {
					errs <- err
					return
				}
				if err := release(ctx); err != nil {
					errs <- err
					return
				}
				n++
			}
			total.Add(n)
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(total.Load()) / time.Since(start).Seconds(), nil
}

// handoff runs cfg.waiters goroutines contending for one lock. Each holder
// notes when it starts releasing; the next acquirer (another goroutine)
// records the time since then.
func handoff(ctx context.Context, l lib, cfg config) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.handoffTime)
	defer cancel()
	var (
		mu       sync.Mutex
		lat      []time.Duration
		released time.Time
		lastID   = -1
		firstErr error
	)
	name := fmt.Sprintf("h:%d", time.Now().UnixNano())
	var wg sync.WaitGroup
	for id := range cfg.waiters {
		wg.Go(func() {
			for ctx.Err() == nil {
				release, err := l.acquire(ctx, name, true)
				got := time.Now()
				if err != nil {
					if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
						mu.Lock()
						firstErr = cmp(firstErr, err)
						mu.Unlock()
					}
					return
				}
				mu.Lock()
				if lastID >= 0 && lastID != id {
					lat = append(lat, got.Sub(released))
				}
				done := len(lat) >= cfg.handoffs
				mu.Unlock()
				busyWait(cfg.hold)
				mu.Lock()
				released, lastID = time.Now(), id
				mu.Unlock()
				if err := release(context.WithoutCancel(ctx)); err != nil {
					mu.Lock()
					firstErr = cmp(firstErr, err)
					mu.Unlock()
					return
				}
				if done {
					cancel()
					return
				}
				// Let the others in before queueing again.
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
	return lat, firstErr
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// busyWait keeps the CPU for d, as a holder doing work would: sleeping
// would hand the CPU to the waiters.
func busyWait(d time.Duration) {
	end := time.Now().Add(d)
	for {
		if !time.Now().Before(end) {
			return
		}
	}
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(len(sorted)-1, i-1))]
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// cmdCounter counts the commands the client sends (pub/sub messages
// received are not commands), to show how hard waiters poll Redis.
type cmdCounter struct{ n atomic.Int64 }

func (h *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

func cleanup(rdb *redis.Client, prefix string) {
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		rdb.Unlink(ctx, iter.Val())
	}
}
