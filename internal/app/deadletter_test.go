package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deadLetter buys one unit and fails its order task until it is a dead letter.
func deadLetter(t *testing.T, s *sale, sku uint64, user string) string {
	t.Helper()
	r := s.buy(0, sku, user, 1)
	require.Equal(t, http.StatusAccepted, r.Status, r.Raw)
	q := s.apps[0].Stock.Queue(sku)
	ctx := context.Background()
	for {
		claimed, err := q.Claim(ctx, 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		dead, err := q.Nack(ctx, claimed[0], errors.New("injected failure"))
		require.NoError(t, err)
		if dead {
			return r.str("order_id")
		}
		time.Sleep(5 * time.Millisecond) // past the retry back-off of attempt 1
	}
}

func TestDeadLettersAreKeptUntilAnOperatorActs(t *testing.T) {
	onBackends(t, saleOpts{noWorkers: true, env: map[string]string{"SECKILL_ORDER_MAX_ATTEMPTS": "1"}}, func(t *testing.T, s *sale) {
		sku := s.seed(5, 1)
		kept := deadLetter(t, s, sku, "alice")
		dropped := deadLetter(t, s, sku, "bob")

		rep := s.audit(sku)
		assert.False(t, rep.Consistent)
		assert.Equal(t, int64(2), rep.DeadLetters)
		assert.Equal(t, int64(3), *rep.RedisLeft)

		q := s.do(0, "GET", fmt.Sprintf("/admin/skus/%d/queue", sku), "", nil)
		require.Equal(t, http.StatusOK, q.Status, q.Raw)
		assert.Equal(t, int64(2), q.num("dead"))

		list := s.do(0, "GET", fmt.Sprintf("/admin/skus/%d/dead", sku), "", nil)
		require.Equal(t, http.StatusOK, list.Status, list.Raw)
		dead, _ := list.Body["dead"].([]any)
		require.Len(t, dead, 2)
		first := dead[0].(map[string]any)
		assert.Equal(t, "order.create", first["type"])
		assert.Contains(t, first["last_error"], "injected failure")

		// Dropping an accepted order gives its unit back.
		r := s.do(0, "DELETE", fmt.Sprintf("/admin/skus/%d/dead/%s", sku, dropped), "", nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		assert.Equal(t, http.StatusNotFound, s.do(0, "DELETE", fmt.Sprintf("/admin/skus/%d/dead/%s", sku, dropped), "", nil).Status)
		rep = s.audit(sku)
		assert.Equal(t, int64(4), *rep.RedisLeft)

		// Requeued, the other one is queued again and its shopper sees it.
		r = s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/dead/%s/requeue", sku, kept), "", nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		assert.Equal(t, "queued", s.do(0, "GET", "/api/v1/orders/"+kept, "alice", nil).str("status"))
		rep = s.audit(sku)
		assert.True(t, rep.Consistent, "%+v", rep)
		assert.Equal(t, int64(1), rep.Queued)

		assert.Equal(t, http.StatusNotFound, s.do(0, "POST", fmt.Sprintf("/admin/skus/%d/dead/nope/requeue", sku), "", nil).Status)
		assert.Equal(t, http.StatusBadRequest, s.do(0, "GET", fmt.Sprintf("/admin/skus/%d/dead?n=-1", sku), "", nil).Status)
	})
}
