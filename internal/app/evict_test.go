package app

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// A Redis that may evict keys (an evicted stock hash or queue key silently
// breaks the sale's guarantees) is reported at start in the log and on
// /readyz; the instance stays ready.
func TestRedisThatMayEvictIsReported(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster bool
		args    []string // redis-server arguments
		policy  string   // set with CONFIG SET; "" keeps the default
		want    string   // /readyz redis_maxmemory_policy
		logged  string   // in the log at start
	}{
		{name: "noeviction", policy: "noeviction", want: "noeviction"},
		{name: "allkeys-lru", policy: "allkeys-lru", want: "allkeys-lru", logged: "level=ERROR"},
		{name: "cluster", cluster: true, policy: "volatile-lru", want: "volatile-lru", logged: "level=ERROR"},
		{name: "config not allowed", args: []string{"--rename-command", "CONFIG", ""}, want: "unknown", logged: "level=INFO"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var srv *testsvc.RedisServer
			addrs := ""
			if tc.cluster {
				srv = testsvc.StartRedisClusterNode(t)
				addrs = srv.Addr() + "," + srv.Addr()
			} else {
				srv = testsvc.StartRedisServer(t, tc.args...)
				addrs = srv.Addr()
			}
			if tc.policy != "" {
				require.NoError(t, srv.Client().ConfigSet(t.Context(), "maxmemory-policy", tc.policy).Err())
			}
			var log testutil.SyncBuffer
			s := startSale(t, saleOpts{noWorkers: true, log: &log, env: map[string]string{"SECKILL_REDIS_ADDRS": addrs}})

			r := s.do(0, "GET", "/readyz", "", nil)
			assert.Equal(t, http.StatusOK, r.Status, "an instance stays ready: %s", r.Raw)
			assert.Equal(t, tc.want, r.Str("redis_maxmemory_policy"), r.Raw)
			warnings, _ := r.Body["warnings"].([]any)
			evicting := tc.want != "noeviction" && tc.want != "unknown"
			if evicting {
				require.Len(t, warnings, 1, r.Raw)
				assert.Contains(t, warnings[0], tc.want)
				assert.Contains(t, warnings[0], "noeviction")
			} else {
				assert.Empty(t, warnings, r.Raw)
			}

			var line string
			for _, l := range strings.Split(log.String(), "\n") {
				if strings.Contains(l, "maxmemory-policy") {
					line = l
				}
			}
			if tc.logged == "" {
				assert.Empty(t, line)
				return
			}
			assert.Contains(t, line, tc.logged)
			if evicting {
				assert.Contains(t, line, tc.want)
				assert.Contains(t, line, "CONFIG SET maxmemory-policy noeviction")
			}
		})
	}
}
