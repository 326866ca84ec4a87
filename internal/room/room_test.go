package room

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/pace"
	"github.com/seckill/seckill/internal/replica"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

var t0 = time.Date(2030, 1, 2, 3, 0, 0, 0, time.UTC)

const testKey = "room-test-key-0123456789abcdef-0123456789"

// fixture is a room and the stock of one SKU on the test Redis, on an
// injected clock: the room opens at t0, the sale starts at t0+1m and ends
// at t0+1h.
type fixture struct {
	t     testing.TB
	clock *testutil.Clock
	room  *Room
	stock *stock.Store
	sku   *catalog.SKU
	// sizes are the other SKUs of a drop whose room is sku's (drop_test.go).
	sizes map[uint64]*catalog.SKU
}

func newFixture(t testing.TB, units int64, limit int, r catalog.Room) *fixture {
	t.Helper()
	rdb, prefix := testsvc.Redis(t)
	return newFixtureOn(t, rdb, prefix, units, limit, r)
}

// newFixtureOn is newFixture on rdb, with keys under prefix.
func newFixtureOn(t testing.TB, rdb redis.UniversalClient, prefix string, units int64, limit int, r catalog.Room) *fixture {
	t.Helper()
	clock := testutil.NewClock(t0)
	signer, err := NewSigner([]string{testKey})
	require.NoError(t, err)
	store := stock.NewStore(rdb, stock.StoreOptions{Prefix: prefix, Now: clock.Now})
	sku := &catalog.SKU{ID: 7, StockTotal: units, PerUserLimit: limit, Buckets: 1,
		StartsAt: t0.Add(time.Minute), EndsAt: t0.Add(time.Hour), Room: r}
	sku.Room.OpensAt = &t0
	if sku.Room.Mode == "" {
		sku.Room.Mode = catalog.RoomRandom
	}
	if sku.Room.Seed == "" {
		sku.Room.Seed = strings.Repeat("ab", 32)
	}
	if sku.Room.PassTTLMS == 0 {
		sku.Room.PassTTLMS = 60_000
	}
	if sku.Room.Overbook == 0 {
		sku.Room.Overbook = 1
	}
	_, err = store.Configure(t.Context(), sku.ID, stock.Config{Total: units, Limit: limit, Expires: t0.Add(48 * time.Hour)}, true)
	require.NoError(t, err)
	f := &fixture{t: t, clock: clock, stock: store, sku: sku}
	f.room = New(f, rdb, replica.New(rdb, 0, 0), signer, Options{Prefix: prefix, AdmitPerSecond: 10, Now: clock.Now})
	return f
}

// Get is the fixture's SKU, as the catalog would have it.
func (f *fixture) Get(_ context.Context, id uint64) (*catalog.SKU, error) {
	if s, ok := f.sizes[id]; ok {
		return s, nil
	}
	if id != f.sku.ID {
		return nil, catalog.ErrNotFound
	}
	return f.sku, nil
}

func (f *fixture) join(user string) Status {
	f.t.Helper()
	st, err := f.room.Join(f.t.Context(), f.sku.ID, user)
	require.NoError(f.t, err)
	return st
}

func (f *fixture) peek(user string) Status {
	f.t.Helper()
	st, err := f.room.Peek(f.t.Context(), f.sku.ID, user)
	require.NoError(f.t, err)
	return st
}

// buy buys one unit for user with their pass; the request id is rid.
func (f *fixture) buy(user, pass, rid string) stock.Result {
	f.t.Helper()
	p, err := f.room.CheckPass(f.t.Context(), f.sku, user, pass)
	require.NoError(f.t, err)
	_, res, err := f.stock.Buy(f.t.Context(), stock.Part{SKU: f.sku.ID},
		[]stock.Request{{User: user, Qty: 1, RequestID: rid, Created: f.clock.Now(), Pass: p}}, stock.Guard{})
	require.NoError(f.t, err)
	return res[0]
}

// published decodes the room's published draw, which has no field a Draw
// does not.
func (f *fixture) published() Draw {
	f.t.Helper()
	doc, err := f.room.Published(f.t.Context(), f.sku.ID)
	require.NoError(f.t, err)
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	var d Draw
	require.NoError(f.t, dec.Decode(&d), "%s", doc)
	return d
}

// One ticket per shopper, whatever they send or retry; a look without a
// ticket, a room not open yet and a SKU without a room are refused.
func TestJoinIsIdempotent(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{})
	_, err := f.room.Peek(t.Context(), f.sku.ID, "alice")
	require.ErrorIs(t, err, ErrNoTicket)
	a := f.join("alice")
	assert.Equal(t, Waiting, a.Status)
	assert.Regexp(t, `^t[a-z2-7]{26}$`, a.Ticket)
	assert.Zero(t, a.Position, "no place before the draw")
	assert.EqualValues(t, 30_000, a.RetryAfterMS, "until the start, at most 30s")
	for range 3 {
		assert.Equal(t, a.Ticket, f.join("alice").Ticket)
	}
	assert.Equal(t, a.Ticket, f.peek("alice").Ticket)
	assert.NotEqual(t, a.Ticket, f.join("bob").Ticket)

	_, err = f.room.Join(t.Context(), 8, "carol")
	require.ErrorIs(t, err, catalog.ErrNotFound)
	room := f.sku.Room
	f.sku.Room.OpensAt = new(t0.Add(time.Second))
	_, err = f.room.Join(t.Context(), f.sku.ID, "carol")
	require.ErrorIs(t, err, ErrNotOpen)
	f.sku.Room = catalog.Room{}
	_, err = f.room.Join(t.Context(), f.sku.ID, "carol")
	require.ErrorIs(t, err, ErrNoRoom)
	f.sku.Room = room
}

// The draw puts the pre-queue in the order its published seed and tickets
// recompute, and later joiners behind it in join order.
func TestDrawRecomputesFromThePublishedDraw(t *testing.T) {
	f := newFixture(t, 100, 1, catalog.Room{})
	tickets := map[string]string{}
	for i := range 40 {
		u := fmt.Sprintf("u%02d", i)
		tickets[u] = f.join(u).Ticket
	}
	f.clock.Advance(time.Minute)
	late := f.join("late")
	assert.EqualValues(t, 41, late.Position, "behind the pre-queue")
	place := map[string]int64{}
	for u := range tickets {
		place[tickets[u]] = f.peek(u).Position
	}

	_, err := f.room.Published(t.Context(), f.sku.ID)
	require.ErrorIs(t, err, ErrNotPublished)
	f.clock.Advance(f.sku.EndsAt.Sub(f.clock.Now()))
	d := f.published()
	sum := sha256.Sum256([]byte(d.Seed))
	assert.Equal(t, hex.EncodeToString(sum[:]), d.SeedSHA256)
	assert.Equal(t, f.sku.Room.SeedSHA256(), d.SeedSHA256)
	assert.Len(t, d.PreQueue, 40)
	assert.Equal(t, []string{late.Ticket}, d.Later)
	for i, ticket := range Drawn(d.Seed, d.PreQueue) {
		assert.EqualValues(t, i+1, place[ticket], "ticket %s", ticket)
	}
	assert.Equal(t, Closed, f.peek("u00").Status, "the sale is over")
	after := f.join("after-the-end")
	assert.Equal(t, Status{Status: Closed, Reason: "sale_ended"}, after, "no ticket issued after the end")
}

// Many instances reaching the start at once draw once, and agree.
func TestConcurrentLooksAtTheStartDrawOnce(t *testing.T) {
	f := newFixture(t, 100, 1, catalog.Room{})
	for i := range 30 {
		f.join(fmt.Sprintf("u%02d", i))
	}
	f.clock.Advance(time.Minute)
	var wg sync.WaitGroup
	got := make([]int64, 30)
	for i := range 30 {
		wg.Go(func() {
			st, err := f.room.Peek(t.Context(), f.sku.ID, fmt.Sprintf("u%02d", i))
			assert.NoError(t, err)
			got[i] = st.Position
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for _, p := range got {
		assert.True(t, p >= 1 && p <= 30 && !seen[p], "place %d", p)
		seen[p] = true
	}
}

// Tickets are admitted in order at the admission rate; valid unused passes
// never pass units left x overbook; a pass expiring unused frees its slot;
// at 0 left the waiting get sold_out; units that come back reopen it.
func TestAdmissionFollowsRateAndStock(t *testing.T) {
	f := newFixture(t, 4, 1, catalog.Room{Mode: catalog.RoomFIFO, AdmitPerSecond: 2, Overbook: 1.5, PassTTLMS: 10_000})
	for i := range 12 {
		st := f.join(fmt.Sprintf("u%02d", i))
		assert.EqualValues(t, i+1, st.Position, "fifo: join order")
	}
	f.clock.Advance(time.Minute)
	assert.Equal(t, Waiting, f.peek("u00").Status, "nothing earned at the start")
	f.clock.Advance(time.Second)
	a := f.peek("u00")
	require.Equal(t, Admitted, a.Status, "%+v", a)
	assert.NotEmpty(t, a.Pass)
	assert.Equal(t, Admitted, f.peek("u01").Status)
	w := f.peek("u02")
	assert.Equal(t, Waiting, w.Status, "2 a second")
	assert.EqualValues(t, 0, w.Ahead)
	assert.EqualValues(t, 1000, w.RetryAfterMS)

	for range 9 { // a second's admissions at most at a time; none expires yet
		f.clock.Advance(time.Second)
		f.peek("u11")
	}
	assert.Equal(t, Admitted, f.peek("u05").Status, "6 = 4 left x 1.5")
	assert.Equal(t, Waiting, f.peek("u06").Status)

	// Two buy: 2 left, cap 3, 4 passes still valid.
	for _, u := range []string{"u00", "u01"} {
		res := f.buy(u, f.peek(u).Pass, "")
		require.NoError(t, res.Err)
	}
	assert.Equal(t, Closed, f.peek("u00").Status)
	assert.Equal(t, "pass_used", f.peek("u00").Reason)
	f.clock.Advance(time.Second)
	assert.Equal(t, Waiting, f.peek("u06").Status)

	// The other passes expire unused: their slots go to the next.
	f.clock.Advance(2 * time.Second)
	for range 3 {
		f.clock.Advance(time.Second)
		f.peek("u11")
	}
	st := f.peek("u02")
	assert.Equal(t, Closed, st.Status)
	assert.Equal(t, "pass_expired", st.Reason)
	assert.Equal(t, Admitted, f.peek("u06").Status)
	assert.Equal(t, Admitted, f.peek("u07").Status)
	assert.Equal(t, Admitted, f.peek("u08").Status, "cap 3 = 2 left x 1.5")
	assert.Equal(t, Waiting, f.peek("u09").Status)

	for _, u := range []string{"u06", "u07"} {
		require.NoError(t, f.buy(u, f.peek(u).Pass, "").Err)
	}
	f.clock.Advance(time.Second)
	assert.Equal(t, SoldOut, f.peek("u09").Status, "no unit left")
	assert.EqualValues(t, 5000, f.peek("u09").RetryAfterMS)

	// A cancelled order's unit comes back: admission reopens.
	_, err := f.stock.Return(t.Context(), stock.Part{SKU: f.sku.ID}, "u06-order", "u06", 1, stock.ReturnClosed)
	require.NoError(t, err)
	f.clock.Advance(11 * time.Second) // u08's pass has expired meanwhile
	assert.Equal(t, Admitted, f.peek("u09").Status)
}

// A pass is spent with the units, once: a second buy with it is refused,
// a retry of the first (same request id) gets its order.
func TestPassIsSpentOnce(t *testing.T) {
	f := newFixture(t, 10, 2, catalog.Room{Mode: catalog.RoomFIFO})
	f.join("alice")
	f.clock.Advance(time.Minute + time.Second)
	pass := f.peek("alice").Pass
	require.NotEmpty(t, pass)
	first := f.buy("alice", pass, "r1")
	require.NoError(t, first.Err)
	again := f.buy("alice", pass, "r1")
	assert.True(t, again.Replayed)
	assert.Equal(t, first.OrderID, again.OrderID)
	assert.ErrorIs(t, f.buy("alice", pass, "r2").Err, stock.ErrPassSpent)
	assert.ErrorIs(t, f.buy("alice", pass, "").Err, stock.ErrPassSpent)
}

// A pass is spent only by a buy that takes units: a buy refused for the
// limit or the units keeps it valid, in its batch too, and a pass sent
// twice in one batch buys once.
func TestAPassIsSpentOnlyByAnAcceptedBuy(t *testing.T) {
	f := newFixture(t, 10, 2, catalog.Room{Mode: catalog.RoomFIFO})
	f.join("alice")
	f.clock.Advance(time.Minute + time.Second)
	p, err := f.room.CheckPass(f.t.Context(), f.sku, "alice", f.peek("alice").Pass)
	require.NoError(t, err)
	buy := func(reqs ...stock.Request) []stock.Result {
		_, res, err := f.stock.Buy(t.Context(), stock.Part{SKU: f.sku.ID}, reqs, stock.Guard{})
		require.NoError(t, err)
		return res
	}
	req := func(qty int, rid string) stock.Request {
		return stock.Request{User: "alice", Qty: qty, RequestID: rid, Created: f.clock.Now(), Pass: p}
	}
	assert.ErrorIs(t, buy(req(3, "over-limit"))[0].Err, stock.ErrLimitExceeded)
	assert.Equal(t, Admitted, f.peek("alice").Status, "not spent by a refused buy")
	ttl, err := f.room.rdb.PTTL(t.Context(), stock.RoomPrefix(f.room.o.Prefix, f.sku.ID)+"valid").Result()
	require.NoError(t, err)
	assert.Positive(t, ttl, "the hash left as it was, with its end")
	res := buy(req(3, "over-limit-again"), req(1, "a"), req(1, "b"))
	assert.ErrorIs(t, res[0].Err, stock.ErrLimitExceeded)
	require.NoError(t, res[1].Err, "not spent by the refused buy before it in the batch")
	assert.ErrorIs(t, res[2].Err, stock.ErrPassSpent, "spent by the one before it in the batch")
	st := f.peek("alice")
	assert.Equal(t, Closed, st.Status)
	assert.Equal(t, "pass_used", st.Reason)

	// Expired as signed, though still among the valid passes.
	f.join("bob")
	f.clock.Advance(time.Second)
	pb, err := f.room.CheckPass(f.t.Context(), f.sku, "bob", f.peek("bob").Pass)
	require.NoError(t, err)
	pb.Expires = f.clock.Now()
	res = buy(stock.Request{User: "bob", Qty: 1, Created: f.clock.Now(), Pass: pb})
	assert.ErrorIs(t, res[0].Err, stock.ErrPassSpent)
	assert.Equal(t, Admitted, f.peek("bob").Status, "not spent")

	// Past both passes' expiry the room tells the spent one from the one
	// that expired unused.
	f.clock.Advance(2 * time.Minute)
	assert.Equal(t, "pass_used", f.peek("alice").Reason)
	assert.Equal(t, "pass_expired", f.peek("bob").Reason)
	rep, err := f.room.Audit(t.Context(), f.sku, f.buyers("alice"))
	require.NoError(t, err)
	assert.EqualValues(t, 2, rep.Admitted)
	assert.EqualValues(t, 1, rep.ExpiredPasses, "bob's only")
	assert.Zero(t, rep.ValidPasses)
}

// The audit finds a buyer the room never admitted.
func TestAuditFindsBuyersNotAdmitted(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{Mode: catalog.RoomFIFO})
	none, err := f.room.Audit(t.Context(), f.sku, nil)
	require.NoError(t, err)
	assert.False(t, none.Kept, "no room state yet")
	assert.False(t, none.StateLost)
	f.join("alice")
	f.join("bob")
	f.clock.Advance(time.Minute + time.Second)
	require.Equal(t, Admitted, f.peek("alice").Status)
	rep, err := f.room.Audit(t.Context(), f.sku, f.buyers("alice", "bob", "mallory", "alice"))
	require.NoError(t, err)
	assert.True(t, rep.Kept)
	assert.EqualValues(t, 2, rep.Joined)
	assert.EqualValues(t, 2, rep.Admitted, "10 a second")
	assert.EqualValues(t, 2, rep.ValidPasses)
	assert.EqualValues(t, 1, rep.NotAdmitted)
	assert.Equal(t, []string{"mallory"}, rep.Sample)
	assert.False(t, rep.StateLost)
	assert.Zero(t, rep.Unchecked)
	assert.Equal(t, t0, *rep.Since, "alice's ticket")
}

// After Redis loses a room's state mid-sale, the admissions made before
// the loss cannot be checked: the audit says the state was lost and counts
// the buyers concerned, and reports as not admitted only a buyer who
// ordered after the state was made again and whom it did not admit.
func TestAuditAfterTheRoomsStateWasLost(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{Mode: catalog.RoomFIFO})
	f.join("alice")
	f.join("bob")
	f.clock.Advance(time.Minute + time.Second)
	require.NoError(t, f.buy("alice", f.peek("alice").Pass, "").Err)
	require.NoError(t, f.buy("bob", f.peek("bob").Pass, "").Err)
	before := f.buyers("alice", "bob")

	k := f.room.keys(f.sku.ID)
	require.NoError(t, f.room.rdb.Del(t.Context(), k.meta, k.who, k.pre, k.line, k.passes, k.expired, k.valid).Err())
	f.clock.Advance(time.Second)
	rep, err := f.room.Audit(t.Context(), f.sku, before)
	require.NoError(t, err)
	assert.False(t, rep.Kept)
	assert.True(t, rep.StateLost, "buyers, and no state before its expiry")
	assert.EqualValues(t, 2, rep.Unchecked)
	assert.Zero(t, rep.NotAdmitted)

	// Made again by the next join; alice joins again too, and is
	// admitted without buying (her limit is spent).
	made := f.clock.Now()
	f.join("carol")
	f.join("alice")
	f.clock.Advance(time.Second)
	require.NoError(t, f.buy("carol", f.peek("carol").Pass, "").Err)
	rep, err = f.room.Audit(t.Context(), f.sku, append(before, f.buyers("carol", "mallory")...))
	require.NoError(t, err)
	assert.True(t, rep.Kept)
	assert.True(t, rep.StateLost)
	assert.Equal(t, made, *rep.Since)
	assert.EqualValues(t, 2, rep.Unchecked, "alice and bob, who ordered before")
	assert.EqualValues(t, 1, rep.NotAdmitted, "mallory ordered since, unadmitted")
	assert.Equal(t, []string{"mallory"}, rep.Sample)

	// Past the state's expiry nothing is kept, and nothing is checked.
	f.clock.Advance(f.sku.EndsAt.Add(f.room.o.Keep).Sub(f.clock.Now()))
	require.NoError(t, f.room.rdb.Del(t.Context(), k.meta).Err())
	rep, err = f.room.Audit(t.Context(), f.sku, before)
	require.NoError(t, err)
	assert.Equal(t, Report{}, *rep)
}

// buyers are users who each placed their last order now.
func (f *fixture) buyers(users ...string) []Buyer {
	out := make([]Buyer, len(users))
	for i, u := range users {
		out[i] = Buyer{User: u, Last: f.clock.Now()}
	}
	return out
}

// A room created with admit_per_second 0 admits at twice the orders per
// second the backend persisted at its best in the last minute, and at
// least at the configured rate.
func TestARoomOfRateZeroFollowsTheBackendsPace(t *testing.T) {
	f := newFixture(t, 1000, 1, catalog.Room{Mode: catalog.RoomFIFO})
	p := pace.New(f.room.rdb, f.room.o.Prefix, f.clock.Now)
	f.room.o.Pace = p
	for i := range 200 {
		f.join(fmt.Sprintf("u%03d", i))
	}
	admitted := func() int64 {
		rep, err := f.room.Audit(t.Context(), f.sku, nil)
		require.NoError(t, err)
		return rep.Admitted
	}
	f.clock.Advance(time.Minute + time.Second)
	f.peek("u199")
	assert.EqualValues(t, 10, admitted(), "nothing persisted yet: the configured 10 a second")

	p.Add(60) // the drain wrote 60 orders in a second
	p.Flush(t.Context())
	f.clock.Advance(time.Second)
	f.peek("u199")
	assert.EqualValues(t, 10+120, admitted(), "twice the backend's best second")
}

// A room whose Redis state is lost after its draw (a Redis restarted
// without persistence, with the stock rebuilt from SQL) starts again
// empty: a ticket and a pass given before the loss are gone, a look
// answers no ticket, the pass buys nothing, and shoppers who join again
// queue first come, first served. The shopper who bought before the loss
// is stopped by the per-shopper limit, which the rebuild keeps.
func TestARoomLostAfterItsDrawStartsAgainInJoinOrder(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{})
	for _, u := range []string{"alice", "bob", "carol"} {
		f.join(u)
	}
	f.clock.Advance(time.Minute + time.Second)
	for _, u := range []string{"alice", "bob", "carol"} {
		require.Equal(t, Admitted, f.peek(u).Status, u)
	}
	require.NoError(t, f.buy("alice", f.peek("alice").Pass, "").Err)
	bobsPass := f.peek("bob").Pass

	// The loss: the room's keys go. The stock stays as the rebuild from
	// SQL would make it again (alice's unit sold, her count kept).
	rdb := f.room.rdb
	k := f.room.keys(f.sku.ID)
	require.NoError(t, rdb.Del(t.Context(), k.meta, k.who, k.pre, k.line, k.passes, k.expired, k.valid).Err())

	_, err := f.room.Peek(t.Context(), f.sku.ID, "bob")
	require.ErrorIs(t, err, ErrNoTicket, "bob's ticket went with the state")
	assert.ErrorIs(t, f.buy("bob", bobsPass, "").Err, stock.ErrPassSpent, "so did his pass")

	carol, bob, alice := f.join("carol"), f.join("bob"), f.join("alice")
	assert.EqualValues(t, 1, carol.Position, "join order, behind a draw of nothing")
	assert.EqualValues(t, 2, bob.Position)
	assert.EqualValues(t, 3, alice.Position)
	f.clock.Advance(time.Second)
	for _, u := range []string{"carol", "bob"} {
		st := f.peek(u)
		require.Equal(t, Admitted, st.Status, u)
		require.NoError(t, f.buy(u, st.Pass, "").Err, u)
	}
	st := f.peek("alice")
	require.Equal(t, Admitted, st.Status)
	assert.ErrorIs(t, f.buy("alice", st.Pass, "").Err, stock.ErrLimitExceeded, "she bought before the loss")

	f.clock.Advance(time.Hour)
	d := f.published()
	assert.Empty(t, d.PreQueue)
	assert.Equal(t, []string{carol.Ticket, bob.Ticket, alice.Ticket}, d.Later)
}

// The draw a crowd of visits waits on is not ended by the visit that
// started it giving up: the others still get their places.
func TestADrawOutlivesTheVisitThatStartedIt(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{})
	f.join("alice")
	f.join("bob")
	f.clock.Advance(time.Minute)
	// Another instance holds the draw's lease: this one's draw waits.
	k := f.room.keys(f.sku.ID)
	require.NoError(t, f.room.rdb.Set(t.Context(), k.drawLock, "other", 0).Err())
	first, cancel := context.WithCancel(t.Context())
	firstDone, secondDone := make(chan error, 1), make(chan error, 1)
	go func() { _, err := f.room.Peek(first, f.sku.ID, "alice"); firstDone <- err }()
	time.Sleep(100 * time.Millisecond)
	go func() { _, err := f.room.Peek(t.Context(), f.sku.ID, "bob"); secondDone <- err }()
	time.Sleep(100 * time.Millisecond)
	cancel()
	require.ErrorIs(t, <-firstDone, context.Canceled)
	require.NoError(t, f.room.rdb.Del(t.Context(), k.drawLock).Err())
	require.NoError(t, <-secondDone)
	st, err := f.room.Peek(t.Context(), f.sku.ID, "bob")
	require.NoError(t, err)
	assert.Positive(t, st.Position, "drawn")
}
