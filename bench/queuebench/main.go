// Command queuebench compares internal/queue with hibiken/asynq on the same
// Redis in one run: end-to-end throughput (enqueue -> claim -> ack, no-op
// handler, producers and consumers running together) and the time to drain
// a backlog of tasks that are all due at once. It prints a markdown table.
//
// By default it starts a private redis-server (no persistence) on a free
// port and stops it at the end, so nothing shared is touched. With -redis it
// uses that server instead: the queue under a key prefix of its own, asynq
// on database -asynq-db; both are cleaned up by key pattern, never by FLUSH.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/queue"
)

type config struct {
	addr        string
	asynqDB     int
	n           int
	drain       int
	producers   int
	batch       int
	workers     int
	claim       int
	concurrency int
	linger      time.Duration
}

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "redis", "", "Redis address; empty starts a private redis-server")
	flag.IntVar(&cfg.asynqDB, "asynq-db", 9, "database number for asynq when -redis is given")
	flag.IntVar(&cfg.n, "n", 50_000, "tasks per end-to-end run")
	flag.IntVar(&cfg.drain, "drain", 100_000, "backlog size for the drain run")
	flag.IntVar(&cfg.producers, "producers", 16, "concurrent producers")
	flag.IntVar(&cfg.batch, "batch", 100, "tasks per EnqueueBatch in the batched run")
	flag.IntVar(&cfg.workers, "workers", 2, "internal/queue consumer workers (one per CPU here)")
	flag.IntVar(&cfg.claim, "claim", 200, "internal/queue tasks per claim")
	flag.IntVar(&cfg.concurrency, "asynq-concurrency", 64, "asynq server concurrency")
	flag.DurationVar(&cfg.linger, "linger", 0, "internal/queue ConsumerOptions.Linger")
	flag.Parse()
	if err := run(context.Background(), cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "queuebench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	if cfg.addr == "" {
		addr, stop, err := startRedis()
		if err != nil {
			return err
		}
		defer stop()
		cfg.addr = addr
	}
	rc := redis.NewClient(&redis.Options{Addr: cfg.addr, PoolSize: 64})
	defer func() { _ = rc.Close() }()
	ac := redis.NewClient(&redis.Options{Addr: cfg.addr, DB: cfg.asynqDB, PoolSize: 64})
	defer func() { _ = ac.Close() }()
	prefix := fmt.Sprintf("queuebench:%d:", time.Now().UnixNano())
	defer deleteKeys(rc, prefix+"*")
	defer deleteKeys(ac, "asynq:*")

	info, _ := rc.Info(ctx, "server").Result()
	fmt.Fprintf(out, "Machine: %d CPUs (nproc), %s; Redis %s; %s\n\n", runtime.NumCPU(), cpuModel(), field(info, "redis_version"), runtime.Version())
	fmt.Fprintf(out, "Settings: %d tasks end to end, %d producers; internal/queue %d workers x %d per claim, linger %v; asynq concurrency %d; drain of %d tasks.\n\n",
		cfg.n, cfg.producers, cfg.workers, cfg.claim, cfg.linger, cfg.concurrency, cfg.drain)

	aE2E, err := asynqEndToEnd(ctx, ac, cfg, cfg.n)
	if err != nil {
		return fmt.Errorf("asynq end to end: %w", err)
	}
	qE2E, err := queueEndToEnd(ctx, rc, prefix+"e2e", cfg, cfg.n, 1)
	if err != nil {
		return fmt.Errorf("queue end to end: %w", err)
	}
	qE2EBatch, err := queueEndToEnd(ctx, rc, prefix+"e2eb", cfg, cfg.n, cfg.batch)
	if err != nil {
		return fmt.Errorf("queue end to end (batch): %w", err)
	}
	aDrain, err := asynqDrain(ctx, ac, cfg)
	if err != nil {
		return fmt.Errorf("asynq drain: %w", err)
	}
	qDrain, err := queueDrain(ctx, rc, prefix+"drain", cfg)
	if err != nil {
		return fmt.Errorf("queue drain: %w", err)
	}

	rate := func(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }
	fmt.Fprintln(out, "| run | hibiken/asynq | internal/queue | ratio |")
	fmt.Fprintln(out, "|---|---:|---:|---:|")
	fmt.Fprintf(out, "| end to end, one Enqueue call per task, %d producers (tasks/s) | %.0f | %.0f | %.1fx |\n",
		cfg.producers, rate(cfg.n, aE2E), rate(cfg.n, qE2E), aE2E.Seconds()/qE2E.Seconds())
	fmt.Fprintf(out, "| end to end, internal/queue producers use EnqueueBatch(%d) (tasks/s) | %.0f (no batch enqueue) | %.0f | %.1fx |\n",
		cfg.batch, rate(cfg.n, aE2E), rate(cfg.n, qE2EBatch), aE2E.Seconds()/qE2EBatch.Seconds())
	fmt.Fprintf(out, "| drain %d due tasks (s) | %.2f | %.2f | %.1fx |\n",
		cfg.drain, aDrain.Seconds(), qDrain.Seconds(), aDrain.Seconds()/qDrain.Seconds())
	fmt.Fprintf(out, "| drain rate (tasks/s) | %.0f | %.0f | |\n", rate(cfg.drain, aDrain), rate(cfg.drain, qDrain))
	return nil
}

// produce runs producers goroutines that call enqueue for tasks [0, n) in
// chunks of size.
func produce(producers, n, size int, enqueue func(from, to int) error) error {
	var wg sync.WaitGroup
	var next atomic.Int64
	errc := make(chan error, producers)
	for range producers {
		wg.Go(func() {
			for {
				from := int(next.Add(int64(size))) - size
				if from >= n {
					return
				}
				if err := enqueue(from, min(from+size, n)); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	return <-errc
}

func waitFor(timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// queueEndToEnd runs consumers while producers enqueue n tasks, and returns
// the time until every task is acked.
func queueEndToEnd(ctx context.Context, c *redis.Client, name string, cfg config, n, size int) (time.Duration, error) {
	q, err := queue.New(c, name, queue.Options{Prefix: "", Logger: quietLogger()})
	if err != nil {
		return 0, err
	}
	var handled atomic.Int64
	stop := startConsumer(c, q, cfg, &handled)
	defer stop()
	payload := []byte(`{"order":1234567,"sku":42,"user":7654321}`)
	start := time.Now()
	err = produce(cfg.producers, n, size, func(from, to int) error {
		if size == 1 {
			_, err := q.Enqueue(ctx, queue.Task{ID: strconv.Itoa(from), Type: "order", Payload: payload})
			return err
		}
		batch := make([]queue.Task, 0, to-from)
		for i := from; i < to; i++ {
			batch = append(batch, queue.Task{ID: strconv.Itoa(i), Type: "order", Payload: payload})
		}
		_, err := q.EnqueueBatch(ctx, batch)
		return err
	})
	if err != nil {
		return 0, err
	}
	err = waitFor(2*time.Minute, func() (bool, error) {
		if handled.Load() < int64(n) {
			return false, nil
		}
		st, err := q.Stats(ctx)
		return st == queue.Stats{}, err
	})
	return time.Since(start), err
}

func startConsumer(c *redis.Client, q *queue.Queue, cfg config, handled *atomic.Int64) (stop func()) {
	waker := queue.NewWaker(c)
	ctx, cancel := context.WithCancel(context.Background())
	cons := queue.NewConsumer(q, func(_ context.Context, ts []*queue.Claimed) []error {
		handled.Add(int64(len(ts)))
		return nil
	}, queue.ConsumerOptions{Workers: cfg.workers, BatchSize: cfg.claim, Waker: waker, Linger: cfg.linger})
	done := make(chan struct{})
	go func() { _ = cons.Run(ctx); close(done) }()
	return func() {
		cancel()
		<-done
		_ = waker.Close()
	}
}

// queueDrain enqueues cfg.drain due tasks, then times consumers emptying the queue.
func queueDrain(ctx context.Context, c *redis.Client, name string, cfg config) (time.Duration, error) {
	q, err := queue.New(c, name, queue.Options{Prefix: "", Logger: quietLogger()})
	if err != nil {
		return 0, err
	}
	payload := []byte(`{"order":1234567,"sku":42,"user":7654321}`)
	err = produce(cfg.producers, cfg.drain, 256, func(from, to int) error {
		batch := make([]queue.Task, 0, to-from)
		for i := from; i < to; i++ {
			batch = append(batch, queue.Task{ID: strconv.Itoa(i), Type: "order", Payload: payload})
		}
		_, err := q.EnqueueBatch(ctx, batch)
		return err
	})
	if err != nil {
		return 0, err
	}
	var handled atomic.Int64
	start := time.Now()
	stop := startConsumer(c, q, cfg, &handled)
	defer stop()
	err = waitFor(3*time.Minute, func() (bool, error) {
		if handled.Load() < int64(cfg.drain) {
			return false, nil
		}
		st, err := q.Stats(ctx)
		return st == queue.Stats{}, err
	})
	return time.Since(start), err
}

const asynqQueue = "queuebench"

func startAsynq(c *redis.Client, cfg config, handled *atomic.Int64) (stop func(), err error) {
	srv := asynq.NewServerFromRedisClient(c, asynq.Config{
		Concurrency: cfg.concurrency,
		Queues:      map[string]int{asynqQueue: 1},
		LogLevel:    asynq.ErrorLevel,
	})
	err = srv.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		handled.Add(1)
		return nil
	}))
	return srv.Shutdown, err
}

func asynqSettled(insp *asynq.Inspector) (bool, error) {
	qi, err := insp.GetQueueInfo(asynqQueue)
	if err != nil {
		return false, err
	}
	return qi.Pending == 0 && qi.Active == 0 && qi.Retry == 0, nil
}

func asynqEndToEnd(ctx context.Context, c *redis.Client, cfg config, n int) (time.Duration, error) {
	client := asynq.NewClientFromRedisClient(c)
	insp := asynq.NewInspectorFromRedisClient(c)
	var handled atomic.Int64
	stop, err := startAsynq(c, cfg, &handled)
	if err != nil {
		return 0, err
	}
	defer stop()
	payload := []byte(`{"order":1234567,"sku":42,"user":7654321}`)
	start := time.Now()
	err = produce(cfg.producers, n, 1, func(from, _ int) error {
		_, err := client.EnqueueContext(ctx, asynq.NewTask("order", payload),
			asynq.Queue(asynqQueue), asynq.TaskID("e2e-"+strconv.Itoa(from)), asynq.MaxRetry(3))
		return err
	})
	if err != nil {
		return 0, err
	}
	err = waitFor(2*time.Minute, func() (bool, error) {
		if handled.Load() < int64(n) {
			return false, nil
		}
		return asynqSettled(insp)
	})
	return time.Since(start), err
}

func asynqDrain(ctx context.Context, c *redis.Client, cfg config) (time.Duration, error) {
	client := asynq.NewClientFromRedisClient(c)
	insp := asynq.NewInspectorFromRedisClient(c)
	payload := []byte(`{"order":1234567,"sku":42,"user":7654321}`)
	err := produce(cfg.producers, cfg.drain, 1, func(from, _ int) error {
		_, err := client.EnqueueContext(ctx, asynq.NewTask("order", payload),
			asynq.Queue(asynqQueue), asynq.TaskID("drain-"+strconv.Itoa(from)), asynq.MaxRetry(3))
		return err
	})
	if err != nil {
		return 0, err
	}
	var handled atomic.Int64
	start := time.Now()
	stop, err := startAsynq(c, cfg, &handled)
	if err != nil {
		return 0, err
	}
	defer stop()
	err = waitFor(3*time.Minute, func() (bool, error) {
		if handled.Load() < int64(cfg.drain) {
			return false, nil
		}
		return asynqSettled(insp)
	})
	return time.Since(start), err
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// startRedis runs a private redis-server on a free port.
func startRedis() (addr string, stop func(), err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, fmt.Errorf("no redis-server for a private server (or pass -redis): %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir, err := os.MkdirTemp("", "queuebench-redis")
	if err != nil {
		return "", nil, err
	}
	//nolint:gosec // redis-server from PATH, with arguments built here
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
	}
	addr = "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	err = waitFor(10*time.Second, func() (bool, error) {
		return c.Ping(context.Background()).Err() == nil, nil
	})
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("private redis-server did not start: %w", err)
	}
	return addr, stop, nil
}

func deleteKeys(c *redis.Client, pattern string) {
	ctx := context.Background()
	iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
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

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func field(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return "?"
}
