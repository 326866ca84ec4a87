package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/config"
)

// openRedis returns a client for the configured Redis (standalone, Cluster or
// Sentinel, as redis.UniversalClient decides from the addresses and master
// name) or, when no address is configured, for an in-process miniredis.
//
// With redis.tls enabled every connection is TLS: go-redis hands the one
// tls.Config to each Cluster node it learns of and, with Sentinel, to the
// connections to the Sentinels as well as to the primary and replicas. A
// certificate or key file that cannot be used is a *config.Error.
func openRedis(ctx context.Context, cfg config.Redis, log *slog.Logger) (redis.UniversalClient, func(), error) {
	if len(cfg.Addrs) == 0 {
		return openMiniredis(log)
	}
	tlsConfig, err := cfg.TLS.ClientConfig()
	if err != nil {
		return nil, nil, err
	}
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:        cfg.Addrs,
		MasterName:   cfg.MasterName,
		Username:     cfg.Username,
		Password:     cfg.Password,
		DB:           cfg.DB,
		PoolSize:     cfg.PoolSize,
		DialTimeout:  cfg.DialTimeout,
		ReadTimeout:  cfg.ReadTimeout,
		WriteTimeout: cfg.WriteTimeout,
		TLSConfig:    tlsConfig,
		// One dial per command attempt. go-redis otherwise dials up to 5
		// times, 100ms apart, so every call to a Redis that is down took
		// about 1.7s to fail; the callers retry by themselves (a buyer gets
		// 503 at once, workers claim again).
		DialerRetries: 1,
		// No resend after an error. A command whose reply timed out or whose
		// connection broke may have run: resending a buy, a fenced lock
		// acquire or a queue claim would run it twice (a replayed buy then
		// fails on its own order id). The callers retry by themselves, with
		// what makes a retry safe: a shopper sends the same request_id,
		// workers claim again after the lease.
		MaxRetries: -1,
	})
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		sendOnce(cc)
	}
	err = retry(ctx, log, "redis", cfg.ConnectTimeout, func(ctx context.Context) error {
		err := rdb.Ping(ctx).Err()
		if tlsRefused(err) {
			return permanent(fmt.Errorf("TLS handshake failed: %w; check redis.tls (ca_file, server_name, "+
				"cert_file, key_file) against the server's certificate and the addresses dialled", err))
		}
		if err != nil && tlsConfig == nil && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			return fmt.Errorf("%w (a Redis that requires TLS closes plain connections so: see redis.tls.enabled)", err)
		}
		return err
	})
	if err != nil {
		_ = rdb.Close()
		return nil, nil, err
	}
	checkEviction(ctx, rdb, log)
	return rdb, func() { _ = rdb.Close() }, nil
}

// tlsRefused reports whether err is a TLS handshake that failed for a reason
// waiting does not cure: the server's certificate is not trusted or not for
// the name dialled, the server answered something other than TLS, or it
// refused the client (no certificate, or one it does not trust).
func tlsRefused(err error) bool {
	var verify *tls.CertificateVerificationError
	var header tls.RecordHeaderError
	var op *net.OpError
	return errors.As(err, &verify) || errors.As(err, &header) ||
		errors.As(err, &op) && op.Op == "remote error"
}

// sendOnce keeps a Cluster client from sending a command again after an
// error that says the command may have reached the server: its reply timed
// out or its connection broke. MaxRetries does not cover this, since the
// Cluster client also resends on such errors within its redirect budget
// (MaxRedirects), which MOVED and ASK redirects need. A hook on each node
// notes the first such error and cancels the command's context, so the
// client stops before its next attempt; the command fails with that error.
//
// Pipelines keep the client's resends: every pipeline seckill sends
// (enqueues, SETNX of request ids, reads) may run twice.
func sendOnce(c *redis.ClusterClient) {
	c.AddHook(clusterSendOnce{})
	c.OnNewNode(func(n *redis.Client) { n.AddHook(nodeSendOnce{}) })
}

type sendOnceKey struct{}

// sent is the state of one command on a Cluster client.
type sent struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	first  error // the first error after which the command may have run
}

func (s *sent) fail(err error) {
	s.mu.Lock()
	if s.first == nil {
		s.first = err
	}
	s.mu.Unlock()
	s.cancel()
}

func (s *sent) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

// commandsOnly is the part of a go-redis hook that leaves dialling and
// pipelines as they are.
type commandsOnly struct{}

func (commandsOnly) DialHook(next redis.DialHook) redis.DialHook { return next }

func (commandsOnly) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// clusterSendOnce wraps each command of the Cluster client.
type clusterSendOnce struct{ commandsOnly }

func (clusterSendOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		s := &sent{cancel: cancel}
		err := next(context.WithValue(ctx, sendOnceKey{}, s), cmd)
		if first := s.err(); first != nil {
			return first
		}
		return err
	}
}

// nodeSendOnce watches each attempt on one node of the Cluster.
type nodeSendOnce struct{ commandsOnly }

func (nodeSendOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && maybeRan(err) {
			if s, ok := ctx.Value(sendOnceKey{}).(*sent); ok {
				s.fail(err)
			}
		}
		return err
	}
}

// maybeRan reports whether a command that failed with err may still have
// run: the connection failed after it was made, so the command may have been
// sent. A reply from the server, a failed dial or no free connection mean it
// was not.
func maybeRan(err error) bool {
	var reply redis.Error
	if errors.As(err, &reply) {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Op != "dial"
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// openMiniredis starts the embedded Redis. miniredis only ages keys when told
// to, so a goroutine advances its clock with the wall clock: lock and lease
// TTLs then expire as they would on a real server.
func openMiniredis(log *slog.Logger) (redis.UniversalClient, func(), error) {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, nil, fmt.Errorf("embedded redis: %w", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), PoolSize: 64})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		const tick = 10 * time.Millisecond
		t := time.NewTicker(tick)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				m.FastForward(now.Sub(last))
				last = now
			}
		}
	})
	log.Warn("EMBEDDED MODE: using an in-process Redis (miniredis); data is lost at exit — set SECKILL_REDIS_ADDRS for a real server", "addr", m.Addr())
	return rdb, func() {
		close(stop)
		wg.Wait()
		_ = rdb.Close()
		m.Close()
	}, nil
}

// pingPrimaries pings every primary — the standalone server, the master a
// Sentinel client follows, or each Cluster master — so that readiness fails
// while a slot has no reachable primary (a failover under way).
func pingPrimaries(ctx context.Context, rdb redis.UniversalClient) error {
	c, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return rdb.Ping(ctx).Err()
	}
	return c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		if err := m.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("primary %s: %w", m.Options().Addr, err)
		}
		return nil
	})
}

// fewReplicas names the primaries with fewer connected replicas than a buy
// waits for (redis.wait_replicas): their buys answer 503 until one is back.
func fewReplicas(ctx context.Context, rdb redis.UniversalClient, want int) []string {
	if want <= 0 {
		return nil
	}
	var mu sync.Mutex
	var out []string
	check := func(ctx context.Context, m *redis.Client) error {
		info, err := m.Info(ctx, "replication").Result()
		if err != nil {
			return nil // Ready reports an unreachable primary
		}
		n := 0
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
				n, _ = strconv.Atoi(v)
			}
		}
		if n < want {
			mu.Lock()
			out = append(out, fmt.Sprintf("redis primary %s has %d connected replica(s), fewer than redis.wait_replicas %d: its buys answer 503 until one is back", m.Options().Addr, n, want))
			mu.Unlock()
		}
		return nil
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		_ = c.ForEachMaster(ctx, check)
	case *redis.Client:
		_ = check(ctx, c)
	}
	return out
}
