package stock

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testutil"
)

// TestShopperRateInTheBuyScript runs the per-shopper budget (2/s, burst 3)
// on real Redis with a clock the test moves: the burst, a refusal saying
// when to retry, the refill, and what is never charged — a replay of a
// request id and a sold-out answer. Budgets are per shopper and per SKU.
func TestShopperRateInTheBuyScript(t *testing.T) {
	clk := testutil.NewClock(time.Now())
	clock, advance := clk.Now, clk.Advance
	now := clock()
	const sku, other, scarce = 21, 22, 23
	cfg := func(total int64) Config { return Config{Total: total, Limit: 100, Expires: now.Add(time.Hour)} }
	ctx, store := testStore(t, StoreOptions{Now: clock, PerUser: Rate{PerSecond: 2, Burst: 3}},
		map[uint64]Config{sku: cfg(100), other: cfg(100), scarce: cfg(1)})
	b := &buyer{ctx: ctx, t: t, store: store, now: clock}
	buy := b.buy

	first := buy(sku, "alice", "r-1")
	require.NoError(t, first.Err)
	require.NoError(t, buy(sku, "alice", "").Err)
	require.NoError(t, buy(sku, "alice", "").Err)
	limited := buy(sku, "alice", "")
	var rl *RateLimitedError
	require.True(t, errors.As(limited.Err, &rl), "the fourth request at once: %v", limited.Err)
	assert.True(t, errors.Is(limited.Err, ErrRateLimited))
	assert.Equal(t, 500*time.Millisecond, rl.RetryAfter, "one interval at 2/s")

	replay := buy(sku, "alice", "r-1")
	require.NoError(t, replay.Err, "a replay is answered first, never charged")
	assert.Equal(t, first.OrderID, replay.OrderID)
	require.NoError(t, buy(other, "alice", "").Err, "another SKU has its own budget")
	require.NoError(t, buy(sku, "bob", "").Err, "another shopper has their own budget")

	advance(499 * time.Millisecond)
	require.Error(t, buy(sku, "alice", "").Err)
	advance(time.Millisecond)
	require.NoError(t, buy(sku, "alice", "").Err, "refilled after the interval")
	require.Error(t, buy(sku, "alice", "").Err)

	bought := buy(scarce, "carol", "")
	require.NoError(t, bought.Err)
	for range 10 {
		require.ErrorIs(t, buy(scarce, "carol", "").Err, ErrSoldOut, "sold out is answered, not charged")
	}
	advance(time.Second)
	_, err := store.Return(ctx, Part{SKU: scarce}, bought.OrderID, "carol", 1, ReturnClosed)
	require.NoError(t, err)
	require.NoError(t, buy(scarce, "carol", "").Err, "carol's budget was not spent on sold-out answers")

	// A batch with the same shopper several times spends her budget in order.
	advance(time.Hour)
	reqs := make([]Request, 5)
	for i := range reqs {
		reqs[i] = Request{User: "dave", Qty: 1, Created: clock()}
	}
	_, res, err := store.Buy(ctx, Part{SKU: sku}, reqs, Guard{})
	require.NoError(t, err)
	for i, r := range res {
		if i < 3 {
			assert.NoError(t, r.Err, "request %d", i)
		} else {
			assert.ErrorIs(t, r.Err, ErrRateLimited, "request %d", i)
		}
	}
}

// A buy with a waiting room pass is not charged to the shopper's budget:
// the pass lets in one buy, and the room paces its shoppers. The budget
// is neither read nor written, and is whole for a buy without a pass.
func TestABuyWithAPassIsNotCharged(t *testing.T) {
	clk := testutil.NewClock(time.Now())
	const sku = 24
	ctx, store := testStore(t, StoreOptions{Now: clk.Now, PerUser: Rate{PerSecond: 2, Burst: 3}},
		map[uint64]Config{sku: {Total: 100, Limit: 100, Expires: clk.Now().Add(time.Hour)}})
	exp := clk.Now().Add(time.Minute)
	reqs := make([]Request, 6)
	for i := range reqs {
		ticket := "t" + strconv.Itoa(i)
		require.NoError(t, store.rdb.HSet(ctx, RoomPrefix(store.o.Prefix, sku)+"valid", ticket, exp.UnixMilli()).Err())
		reqs[i] = Request{User: "alice", Qty: 1, Created: clk.Now(), Pass: Pass{Ticket: ticket, Expires: exp}}
	}
	_, res, err := store.Buy(ctx, Part{SKU: sku}, reqs, Guard{})
	require.NoError(t, err)
	for i, r := range res {
		assert.NoError(t, r.Err, "request %d with a pass", i)
	}
	n, err := store.rdb.Exists(ctx, newKeys(store.o.Prefix, Part{SKU: sku}).rate("alice")).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "no budget written")

	b := &buyer{ctx: ctx, t: t, store: store, now: clk.Now}
	for i := range 3 {
		require.NoError(t, b.buy(sku, "alice", "").Err, "request %d without a pass: the burst is whole", i)
	}
	assert.ErrorIs(t, b.buy(sku, "alice", "").Err, ErrRateLimited)
}

// A buy whose pass is refused — spent already, expired, or never given —
// is charged like a buy without one: the pass no longer paces its holder,
// and a spent pass still passes the instance's signature check until its
// expiry. The budget is kept per shopper, so the accepted pass costs
// nothing and the refusals count from the first.
func TestABuyWhosePassIsRefusedIsCharged(t *testing.T) {
	clk := testutil.NewClock(time.Now())
	const sku = 25
	ctx, store := testStore(t, StoreOptions{Now: clk.Now, PerUser: Rate{PerSecond: 2, Burst: 3}},
		map[uint64]Config{sku: {Total: 100, Limit: 1, Expires: clk.Now().Add(time.Hour)}})
	exp := clk.Now().Add(time.Minute)
	require.NoError(t, store.rdb.HSet(ctx, RoomPrefix(store.o.Prefix, sku)+"valid", "t1", exp.UnixMilli()).Err())
	buy := func(ticket string, exp time.Time) Result {
		t.Helper()
		_, res, err := store.Buy(ctx, Part{SKU: sku},
			[]Request{{User: "alice", Qty: 1, Created: clk.Now(), Pass: Pass{Ticket: ticket, Expires: exp}}}, Guard{})
		require.NoError(t, err)
		return res[0]
	}
	require.NoError(t, buy("t1", exp).Err, "the pass lets in its buy")

	var codes []string
	for range 6 {
		switch err := buy("t1", exp).Err; {
		case errors.Is(err, ErrPassSpent):
			codes = append(codes, "spent")
		case errors.Is(err, ErrRateLimited):
			codes = append(codes, "limited")
		default:
			t.Fatalf("a spent pass: %v", err)
		}
	}
	assert.Equal(t, []string{"spent", "spent", "spent", "limited", "limited", "limited"}, codes,
		"the burst of 3, then refused by the budget")

	clk.Advance(time.Hour)
	assert.ErrorIs(t, buy("t2", clk.Now().Add(-time.Second)).Err, ErrPassSpent, "refilled: an expired pass is refused as such")
	assert.ErrorIs(t, buy("t3", clk.Now().Add(time.Minute)).Err, ErrPassSpent, "a pass never given")
	assert.ErrorIs(t, buy("t4", clk.Now().Add(time.Minute)).Err, ErrPassSpent)
	assert.ErrorIs(t, buy("t5", clk.Now().Add(time.Minute)).Err, ErrRateLimited, "the fourth refusal at once")
}
