package app

import (
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/migrations"
)

// Instances started at once on a fresh database all start: they migrate one
// after the other.
func TestInstancesStartTogetherOnAFreshDatabase(t *testing.T) {
	_, prefix := testsvc.Redis(t)
	env := map[string]string{
		"SECKILL_REDIS_ADDRS":      testsvc.Env(t, testsvc.EnvRedis),
		"SECKILL_REDIS_KEY_PREFIX": prefix,
		"SECKILL_MYSQL_DSN":        testsvc.MySQL(t),
		"SECKILL_ADMIN_TOKEN":      adminToken,
		"SECKILL_AUTH_MODE":        "header",
	}
	cfg, err := config.Load("", func(k string) string { return env[k] })
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	const n = 3
	apps := make([]*App, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			apps[i], errs[i] = Open(t.Context(), cfg, log, true)
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "instance %d", i)
		defer apps[i].Close()
	}
	sqlDB, err := apps[0].DB.DB()
	require.NoError(t, err)
	pending, err := migrations.Pending(t.Context(), sqlDB, migrations.MySQL)
	require.NoError(t, err)
	assert.Zero(t, pending)
	for i := range n {
		assert.NoError(t, apps[i].Ready(t.Context()), "instance %d", i)
	}
}
