package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/config"
)

// openRedis returns a client for the configured Redis (standalone, Cluster or
// Sentinel, as redis.UniversalClient decides from the addresses and master
// name) or, when no address is configured, for an in-process miniredis.
func openRedis(ctx context.Context, cfg config.Redis, log *slog.Logger) (redis.UniversalClient, func(), error) {
	if len(cfg.Addrs) == 0 {
		return openMiniredis(log)
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
		// One dial per command attempt. go-redis otherwise dials up to 5
		// times, 100ms apart, so every call to a Redis that is down took
		// about 1.7s to fail; the callers retry by themselves (a buyer gets
		// 503 at once, workers claim again).
		DialerRetries: 1,
	})
	err := retry(ctx, log, "redis", cfg.ConnectTimeout, func(ctx context.Context) error {
		return rdb.Ping(ctx).Err()
	})
	if err != nil {
		_ = rdb.Close()
		return nil, nil, err
	}
	return rdb, func() { _ = rdb.Close() }, nil
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
