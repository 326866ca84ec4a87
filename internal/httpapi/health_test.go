package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// /readyz shows the report's warnings whether or not the instance is ready,
// and a warning alone never makes it unready.
func TestReadyzShowsTheReport(t *testing.T) {
	report := func(context.Context) ReadyReport {
		return ReadyReport{RedisMaxmemoryPolicy: "allkeys-lru", Warnings: []string{"set noeviction"}}
	}
	for _, tc := range []struct {
		name   string
		ready  error
		status int
	}{
		{"ready", nil, http.StatusOK},
		{"not ready", errors.New("redis: down"), http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := testAPI(t, func(d *Deps) {
				d.Ready = func(context.Context) error { return tc.ready }
				d.Report = report
			})
			w := send(h, http.MethodGet, "/readyz", nil, nil)
			assert.Equal(t, tc.status, w.Code, w.Body.String())
			var body struct {
				Status   string   `json:"status"`
				Policy   string   `json:"redis_maxmemory_policy"`
				Warnings []string `json:"warnings"`
				Detail   string   `json:"detail"`
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
			assert.Equal(t, "allkeys-lru", body.Policy)
			assert.Equal(t, []string{"set noeviction"}, body.Warnings)
			if tc.ready != nil {
				assert.Equal(t, "unavailable", body.Status)
				assert.Equal(t, "redis: down", body.Detail)
			} else {
				assert.Equal(t, "ready", body.Status)
			}
		})
	}
}
