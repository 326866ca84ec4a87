package app

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/testsvc"
)

// TestShopperBudgetHoldsAcrossInstances: the per-shopper rate limit is one
// budget however many instances a shopper's requests reach, a replay of an
// accepted request id is never charged to it, and other shoppers have
// their own.
func TestShopperBudgetHoldsAcrossInstances(t *testing.T) {
	env := map[string]string{
		"SECKILL_RATE_LIMIT_ENABLED":        "true",
		"SECKILL_RATE_LIMIT_PER_USER":       "5",
		"SECKILL_RATE_LIMIT_PER_USER_BURST": "10",
	}
	onBackends(t, saleOpts{instances: 3, env: env}, func(t *testing.T, s *deployment) {
		sku := s.seed(1000, 1000)
		first := s.do(0, "POST", "/api/v1/orders", "alice", map[string]any{"sku_id": sku, "qty": 1, "request_id": "r-1"})
		require.Equal(t, http.StatusAccepted, first.Status, first.Raw)

		const n = 60
		codes := make([]int, n)
		retry := make([]string, n)
		start := time.Now()
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r := s.buy(i, sku, "alice", 1)
				codes[i], retry[i] = r.Status, r.Header.Get("Retry-After")
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		accepted := 1 // the first request
		for i, c := range codes {
			switch c {
			case http.StatusAccepted:
				accepted++
			case http.StatusTooManyRequests:
				secs, err := strconv.Atoi(retry[i])
				require.NoError(t, err, "Retry-After %q", retry[i])
				assert.GreaterOrEqual(t, secs, 1)
			case http.StatusServiceUnavailable:
				// busy: the SKU's lock was not had in time on a loaded
				// machine; nothing was taken and the shopper retries.
				assert.NotEmpty(t, retry[i], "a 503 says when to retry")
			default:
				t.Fatalf("request %d answered %d", i, c)
			}
		}
		assert.GreaterOrEqual(t, accepted, 10, "the burst is granted")
		assert.LessOrEqual(t, float64(accepted), 10+5*elapsed.Seconds()+1, "%d accepted in %s over 3 instances", accepted, elapsed)

		for i := range 3 {
			r := s.do(i, "POST", "/api/v1/orders", "alice", map[string]any{"sku_id": sku, "qty": 1, "request_id": "r-1"})
			require.Equal(t, http.StatusAccepted, r.Status, "a replay is not charged: %s", r.Raw)
			assert.Equal(t, first.Str("order_id"), r.Str("order_id"))
			require.Equal(t, http.StatusAccepted, s.buy(i, sku, fmt.Sprintf("bob-%d", i), 1).Status, "another shopper has a budget of their own")
		}
		rep := s.drained(sku)
		assert.Equal(t, int64(accepted+3), rep.Orders)
	})
}

// naming counts the commands that name a key of the SKU tagged tag or of
// the rate limiter.
func naming(cmds [][]any, tag string) int {
	n := 0
	for _, c := range cmds {
		for _, a := range c {
			if s, ok := a.(string); ok && (strings.Contains(s, tag) || strings.Contains(s, "rl:")) {
				n++
				break
			}
		}
	}
	return n
}

// TestAnswersThatNeedNoRedisCostNone: with the default rate limits on, a
// buy refused as known sold out, outside the window, over the per-shopper
// qty or for an unknown SKU sends Redis nothing; only such a refusal with a
// request id looks that id up, in one round trip.
func TestAnswersThatNeedNoRedisCostNone(t *testing.T) {
	s := startSale(t, saleOpts{noWorkers: true, env: map[string]string{
		"SECKILL_RATE_LIMIT_ENABLED": "true",
		"SECKILL_RATE_LIMIT_PER_IP":  "1000",
	}})
	soldOut := s.seed(1, 1)
	require.Equal(t, http.StatusAccepted, s.buy(0, soldOut, "first", 1).Status)
	flagged := time.Now() // the sold-out flag is set after this
	require.Equal(t, "sold_out", s.buy(0, soldOut, "second", 1).Str("error"))
	now := time.Now().UTC()
	r := s.do(0, "POST", "/admin/skus", "", map[string]any{
		"name": "Later", "price_cents": 100, "stock": 5, "per_user_limit": 1,
		"starts_at": now.Add(time.Hour), "ends_at": now.Add(2 * time.Hour),
	})
	require.Equal(t, http.StatusCreated, r.Status, r.Raw)
	later := uint64(r.Num("id"))
	inStock := s.seed(5, 1)
	unknown := soldOut + 1_000_000
	require.Equal(t, "unknown_sku", s.buy(0, unknown, "x", 1).Str("error"))

	for _, c := range []struct {
		sku  uint64
		qty  int
		code string
	}{{soldOut, 1, "sold_out"}, {later, 1, "sale_not_started"}, {inStock, 2, "limit_exceeded"}, {unknown, 1, "unknown_sku"}} {
		h := &testsvc.Commands{}
		s.apps[0].Redis.AddHook(h)
		for i := range 50 {
			require.Equal(t, c.code, s.buy(0, c.sku, fmt.Sprintf("u-%d", i), c.qty).Str("error"))
		}
		tag := stock.Tag(c.sku)
		// A SKU known sold out is checked again each time its flag is a
		// second old (stock.SellerOptions.SoldOutRecheck): one buy, of 4
		// commands, per whole second since it was set, which a loaded
		// machine may reach.
		rechecks := 0
		if c.code == "sold_out" {
			rechecks = 4 * int(time.Since(flagged)/time.Second)
		}
		assert.LessOrEqual(t, naming(h.Take(), tag), rechecks, "sku %d (%s): Redis commands", c.sku, c.code)
		r := s.do(0, "POST", "/api/v1/orders", "u-rid", map[string]any{"sku_id": c.sku, "qty": c.qty, "request_id": "r"})
		require.Equal(t, c.code, r.Str("error"), r.Raw)
		if c.code != "unknown_sku" {
			// The request id's key and the SKU's state, in one pipeline;
			// and the address's budget.
			assert.Equal(t, 3, naming(h.Take(), tag), "sku %d (%s) with a request id", c.sku, c.code)
		}
	}
}

// TestShopperBudgetEmbedded: the embedded mode's in-process Redis runs the
// same buy script, budget included.
func TestShopperBudgetEmbedded(t *testing.T) {
	s := startSale(t, saleOpts{embedded: true, env: map[string]string{
		"SECKILL_RATE_LIMIT_ENABLED":        "true",
		"SECKILL_RATE_LIMIT_PER_USER":       "1",
		"SECKILL_RATE_LIMIT_PER_USER_BURST": "3",
	}})
	sku := s.seed(100, 100)
	codes := map[int]int{}
	for range 6 {
		codes[s.buy(0, sku, "alice", 1).Status]++
	}
	assert.GreaterOrEqual(t, codes[http.StatusAccepted], 3)
	assert.LessOrEqual(t, codes[http.StatusAccepted], 4)
	assert.Equal(t, 6, codes[http.StatusAccepted]+codes[http.StatusTooManyRequests], "%v", codes)
}
