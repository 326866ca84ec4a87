package room

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
)

// A room nobody joined before the start publishes an empty pre-queue,
// not null, and no controls changed and no codes used as empty lists; a fifo room every
// ticket in later.
func TestADrawWithoutTicketsIsEmptyLists(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{})
	f.clock.Advance(time.Hour)
	doc, err := f.room.Published(t.Context(), f.sku.ID)
	require.NoError(t, err)
	assert.Contains(t, string(doc), `"pre_queue":[],"later":[],"controls":[],"codes":[],"codes_made":0}`)
	d := f.published()
	assert.Equal(t, []string{}, d.PreQueue)
	assert.Equal(t, f.sku.Room.Seed, d.Seed)
	assert.Equal(t, Rule, d.Rule)

	g := newFixture(t, 10, 1, catalog.Room{Mode: catalog.RoomFIFO})
	a, b := g.join("alice"), g.join("bob")
	g.clock.Advance(time.Hour)
	d = g.published()
	assert.Equal(t, Draw{SKU: g.sku.ID, Mode: catalog.RoomFIFO, Rule: fifoRule, PreQueue: []string{},
		Later: []string{a.Ticket, b.Ticket}, Controls: []Change{}, Codes: []PriorityTicket{}}, d)
}

// A published draw is read from Redis once per process: every caller gets
// the same bytes, a crowd of callers waits on one build, and the document
// is built again only when the room's state changed (a ticket issued late,
// by an instance that had not yet seen the sale end).
func TestAPublishedDrawIsBuiltOnce(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{})
	alice := f.join("alice")
	f.clock.Advance(time.Hour)

	docs := make([][]byte, 20)
	var wg sync.WaitGroup
	for i := range docs {
		wg.Go(func() {
			doc, err := f.room.Published(t.Context(), f.sku.ID)
			assert.NoError(t, err)
			docs[i] = doc
		})
	}
	wg.Wait()
	for _, doc := range docs {
		require.NotEmpty(t, doc)
		assert.Same(t, &docs[0][0], &doc[0], "the same bytes")
	}
	assert.Equal(t, []string{alice.Ticket}, f.published().PreQueue)

	// A ticket issued after the end, as an instance whose copy of the SKU
	// was stale would: the room's state is not the one the document was
	// built from.
	f.sku.EndsAt = f.clock.Now().Add(time.Minute)
	late := f.join("late")
	f.sku.EndsAt = f.clock.Now()
	d := f.published()
	assert.Equal(t, []string{alice.Ticket}, d.PreQueue)
	assert.Equal(t, []string{late.Ticket}, d.Later)
}

// The tickets are read in chunks and written in their order, whatever
// their number.
func TestAPublishedDrawOfManyTickets(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{})
	k := f.room.keys(f.sku.ID)
	n := 2*drawChunk + 7
	pre, later := make([]string, n), make([]string, drawChunk+1)
	pz, lz := make([]redis.Z, n), make([]redis.Z, 0, n+len(later))
	for i := range pre {
		pre[i] = fmt.Sprintf("tpre%023d", i)
		pz[i] = redis.Z{Score: float64(i + 1), Member: pre[i]}
		lz = append(lz, redis.Z{Score: float64(i + 1), Member: pre[i]}) // drawn: places 1..n
	}
	for i := range later {
		later[i] = fmt.Sprintf("tlater%021d", i)
		lz = append(lz, redis.Z{Score: 1e12 + float64(n+i+1), Member: later[i]})
	}
	rdb := f.room.rdb
	require.NoError(t, rdb.ZAdd(t.Context(), k.pre, pz...).Err())
	require.NoError(t, rdb.ZAdd(t.Context(), k.line, lz...).Err())
	require.NoError(t, rdb.HSet(t.Context(), k.meta, "epoch", pre[0], "joined", n+len(later), "drawn", 1).Err())
	f.clock.Advance(time.Hour)
	d := f.published()
	assert.Equal(t, pre, d.PreQueue)
	assert.Equal(t, later, d.Later)
}

// The process keeps the last draws asked for: keptDraws of them, and no
// more than keptDrawBytes together, but the last one whatever its size.
func TestDrawsKeepsTheLastAskedFor(t *testing.T) {
	var d draws
	v := func(sku uint64) drawVersion { return drawVersion{sku: sku, epoch: "e"} }
	for sku := uint64(1); sku <= keptDraws+1; sku++ {
		d.put(v(sku), []byte{byte(sku)})
	}
	_, ok := d.get(v(1))
	assert.False(t, ok, "the least recent went")
	_, ok = d.get(v(2))
	assert.True(t, ok)
	d.put(v(6), []byte{6}) // 2 was used after 3
	_, ok = d.get(v(3))
	assert.False(t, ok)
	_, ok = d.get(v(2))
	assert.True(t, ok)

	d.put(drawVersion{sku: 2, epoch: "f"}, []byte{2}) // built again: in place of the old one
	_, ok = d.get(v(2))
	assert.False(t, ok)
	assert.Len(t, d.docs, keptDraws)

	half := make([]byte, keptDrawBytes/2)
	d.put(v(7), half)
	assert.Len(t, d.docs, keptDraws)
	d.put(v(8), half)
	assert.Len(t, d.docs, 2, "the two halves, nothing beyond the bytes kept")
	d.put(v(9), make([]byte, keptDrawBytes+1))
	assert.Len(t, d.docs, 1, "the last one, whatever its size")
}
