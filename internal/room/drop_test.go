package room

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/testsvc"
)

// makeDrop makes f's SKU the first of a drop with sizes more SKUs of
// units each, laid out under its tag as sale.CreateDrop lays them out.
func (f *fixture) makeDrop(units int64, sizes int) []uint64 {
	f.t.Helper()
	ids := []uint64{f.sku.ID}
	f.sizes = map[uint64]*catalog.SKU{}
	for i := range sizes {
		s := *f.sku
		s.ID, s.StockTotal, s.Room, s.Drop = f.sku.ID+uint64(i)+1, units, catalog.Room{}, f.sku.ID
		_, err := f.stock.Configure(f.t.Context(), s.ID, stock.Config{Total: units, Limit: 1, Drop: f.sku.ID, Expires: t0.Add(48 * time.Hour)}, true)
		require.NoError(f.t, err)
		f.sizes[s.ID] = &s
		ids = append(ids, s.ID)
	}
	f.sku.Drop = f.sku.ID
	f.sku.Group = &catalog.Drop{ID: f.sku.ID, PerUserLimit: 1, SKUs: ids}
	return ids
}

// buySize buys one unit of size id for user with pass.
func (f *fixture) buySize(id uint64, user, pass string) stock.Result {
	f.t.Helper()
	sku, err := f.Get(f.t.Context(), id)
	require.NoError(f.t, err)
	p, err := f.room.CheckPass(f.t.Context(), sku, user, pass)
	require.NoError(f.t, err)
	_, res, err := f.stock.Buy(f.t.Context(), sku.Layout().Home(user),
		[]stock.Request{{User: user, Qty: 1, Created: f.clock.Now(), Pass: p}}, stock.Guard{})
	require.NoError(f.t, err)
	return res[0]
}

// A drop's room, on standalone Redis and on Redis Cluster: one ticket per
// shopper whichever size they come through, admission to the units left
// of every size, a pass that buys any one size once (in the drop's one
// Cluster slot), and sold_out once every size is.
func TestADropsRoom(t *testing.T) {
	for name, cluster := range map[string]bool{"standalone": false, "cluster": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var f *fixture
			if cluster {
				rdb, prefix := testsvc.Cluster(t)
				f = newFixtureOn(t, rdb, prefix, 1, 1, catalog.Room{AdmitPerSecond: 100})
			} else {
				f = newFixture(t, 1, 1, catalog.Room{AdmitPerSecond: 100})
			}
			ids := f.makeDrop(1, 2) // three sizes of one unit
			users := make([]string, 5)
			for i := range users {
				users[i] = fmt.Sprintf("u%d", i)
				st, err := f.room.Join(t.Context(), ids[i%3], users[i])
				require.NoError(t, err)
				assert.Equal(t, f.join(users[i]).Ticket, st.Ticket, "one ticket in the drop's one room")
			}
			f.clock.Advance(time.Minute + time.Second)
			admitted := map[string]string{}
			for _, u := range users {
				if st := f.peek(u); st.Status == Admitted {
					admitted[u] = st.Pass
				}
			}
			assert.Len(t, admitted, 3, "as many passes as units of all sizes, at overbook 1")
			k := 0
			for u, pass := range admitted {
				res := f.buySize(ids[k], u, pass)
				require.NoError(t, res.Err, "%s buys size %d", u, ids[k])
				assert.ErrorIs(t, f.buySize(ids[(k+1)%3], u, pass).Err, stock.ErrPassSpent, "a pass buys once, over the sizes")
				k++
			}
			f.clock.Advance(time.Second)
			for _, u := range users {
				if _, ok := admitted[u]; !ok {
					assert.Equal(t, SoldOut, f.peek(u).Status, "every size is sold out")
				}
			}
		})
	}
}

// A size whose stock state Redis lost stops the drop's room, which asks
// for that size's rebuild.
func TestADropsRoomAsksForALostSizesRebuild(t *testing.T) {
	f := newFixture(t, 1, 1, catalog.Room{AdmitPerSecond: 100})
	ids := f.makeDrop(1, 2)
	lost := make(chan uint64, 1)
	f.room.o.OnStateLost = func(sku uint64) { lost <- sku }
	f.join("alice")
	f.clock.Advance(time.Minute + time.Second)
	require.NoError(t, f.room.rdb.Del(t.Context(), stock.HashKey(f.room.o.Prefix, stock.Part{SKU: ids[2], Drop: ids[0]})).Err())
	_, err := f.room.Peek(t.Context(), ids[0], "alice")
	assert.ErrorIs(t, err, ErrStateLost)
	assert.Equal(t, ids[2], <-lost)
}
