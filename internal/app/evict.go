package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/httpapi"
)

// Redis must keep every key seckill writes: an evicted stock hash, buyers
// hash or queue key silently breaks the sale's guarantees. Only the
// maxmemory-policy noeviction promises that (a full Redis then refuses
// writes, which buyers see as 503).
const (
	noEviction    = "noeviction"
	policyUnknown = "unknown"
)

// evictionPolicy reads maxmemory-policy with CONFIG GET from Redis, or from
// every master of a Cluster. It returns the policy; on a Cluster whose
// masters differ, "addr=policy" for each master, sorted. It returns
// policyUnknown and the error when Redis does not answer CONFIG GET (a
// managed Redis or an ACL may not allow it).
func evictionPolicy(ctx context.Context, rdb redis.UniversalClient) (string, error) {
	get := func(ctx context.Context, c redis.UniversalClient) (string, error) {
		v, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
		if err != nil {
			return "", err
		}
		p, ok := v["maxmemory-policy"]
		if !ok {
			return "", fmt.Errorf("CONFIG GET maxmemory-policy: no value")
		}
		return p, nil
	}
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		p, err := get(ctx, rdb)
		if err != nil {
			return policyUnknown, err
		}
		return p, nil
	}
	var mu sync.Mutex
	byMaster := map[string]string{}
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		p, err := get(ctx, m)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Options().Addr, err)
		}
		mu.Lock()
		byMaster[m.Options().Addr] = p
		mu.Unlock()
		return nil
	})
	if err != nil {
		return policyUnknown, err
	}
	var all []string
	distinct := map[string]bool{}
	for addr, p := range byMaster {
		all = append(all, addr+"="+p)
		distinct[p] = true
	}
	if len(distinct) == 1 {
		for p := range distinct {
			return p, nil
		}
	}
	slices.Sort(all)
	return strings.Join(all, ","), nil
}

// evictionWarning says what is wrong with policy and how to fix it.
func evictionWarning(policy string) string {
	return fmt.Sprintf("redis maxmemory-policy is %s, so Redis may evict stock and queue keys and break the sale's guarantees: "+
		"run CONFIG SET maxmemory-policy noeviction (and set it in redis.conf)", policy)
}

// checkEviction logs, at start, a Redis that may evict keys (at error level:
// the instance still serves) or whose policy cannot be read (at info).
func checkEviction(ctx context.Context, rdb redis.UniversalClient, log *slog.Logger) {
	policy, err := evictionPolicy(ctx, rdb)
	switch {
	case err != nil:
		log.Info("cannot read redis maxmemory-policy; make sure it is noeviction", "err", err.Error())
	case policy != noEviction:
		log.Error("REDIS MAY EVICT KEYS: "+evictionWarning(policy), "maxmemory_policy", policy)
	}
}

// ReadyReport is what /readyz shows besides readiness: Redis's
// maxmemory-policy (none for the embedded Redis) and a warning when it is
// not noeviction.
func (a *App) ReadyReport(ctx context.Context) httpapi.ReadyReport {
	if a.Cfg.EmbeddedRedis() {
		return httpapi.ReadyReport{}
	}
	policy, _ := evictionPolicy(ctx, a.Redis)
	r := httpapi.ReadyReport{RedisMaxmemoryPolicy: policy}
	if policy != noEviction && policy != policyUnknown {
		r.Warnings = append(r.Warnings, evictionWarning(policy))
	}
	r.Warnings = append(r.Warnings, fewReplicas(ctx, a.Redis, a.Cfg.Redis.WaitReplicas)...)
	return r
}
