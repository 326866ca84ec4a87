package room

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
)

// countingScripts counts the room scripts run, by operation.
type countingScripts struct {
	Scripts
	mu  sync.Mutex
	ops map[string]int
}

func (c *countingScripts) Run(ctx context.Context, script *redis.Script, keys []string, args ...any) (*redis.Cmd, error) {
	c.mu.Lock()
	c.ops[args[0].(string)]++
	c.mu.Unlock()
	return c.Scripts.Run(ctx, script, keys, args...)
}

func (c *countingScripts) count(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops[op]
}

// boardFixture is a fixture with a board whose ticks the test runs.
type boardFixture struct {
	*fixture
	board   *Board
	scripts *countingScripts
}

func newBoardFixture(t *testing.T, units int64, r catalog.Room) *boardFixture {
	t.Helper()
	f := newFixture(t, units, 1, r)
	c := &countingScripts{Scripts: f.room.scripts, ops: map[string]int{}}
	f.room.scripts = c
	b := NewBoard(f.room, BoardOptions{manual: true})
	t.Cleanup(b.Close)
	return &boardFixture{fixture: f, board: b, scripts: c}
}

// tick runs the room's tick once, as the board's ticker would.
func (f *boardFixture) tick() {
	f.t.Helper()
	s := f.board.standing(f.sku.ID, f.clock.Now())
	require.True(f.t, f.board.refresh(f.sku.ID, s))
	require.NotNil(f.t, s.copy.Load(), "the tick read the room")
}

func (f *boardFixture) look(user string) Status {
	f.t.Helper()
	st, err := f.board.Peek(f.t.Context(), f.sku.ID, user)
	require.NoError(f.t, err)
	return st
}

// same checks that the board answers every shopper as Redis does.
func (f *boardFixture) same(users []string) {
	f.t.Helper()
	for _, u := range users {
		got, want := f.look(u), f.peek(u)
		want.RetryAfterMS, got.RetryAfterMS = 0, 0
		want.Pass, got.Pass = "", "" // signed at different expiries is fine; compared below
		want.PassExpiresAt, got.PassExpiresAt = nil, nil
		// The board's estimates use the rate it measured; Redis's answer
		// alone knows only the room's rate (eta_test.go).
		want.ETAMS, got.ETAMS, want.ETABasis, got.ETABasis = 0, 0, "", ""
		assert.Equal(f.t, want, got, "shopper %s", u)
	}
}

// A crowd waiting in a room is answered from memory, the same as Redis
// would answer it: before the start, after the draw, as the line moves,
// and once sold out; only tickets at their turn go to Redis.
func TestBoardAnswersTheWaitingFromMemory(t *testing.T) {
	f := newBoardFixture(t, 3, catalog.Room{AdmitPerSecond: 2, Overbook: 1})
	var users []string
	for i := range 20 {
		u := fmt.Sprintf("u%02d", i)
		users = append(users, u)
		st, err := f.board.Join(t.Context(), f.sku.ID, u)
		require.NoError(t, err)
		assert.Equal(t, Waiting, st.Status)
	}
	assert.Equal(t, 20, f.scripts.count("join"), "a ticket is issued in Redis")

	f.tick()
	for _, u := range users {
		st := f.look(u)
		assert.Equal(t, Waiting, st.Status)
		assert.Zero(t, st.Position, "not drawn yet")
		assert.EqualValues(t, 30_000, st.RetryAfterMS)
		again, err := f.board.Join(t.Context(), f.sku.ID, u)
		require.NoError(t, err)
		assert.Equal(t, st.Ticket, again.Ticket, "a join again is the same ticket")
	}
	assert.Equal(t, 20, f.scripts.count("join"))
	assert.Zero(t, f.scripts.count("peek"), "before the start: from memory")

	// The start: the tick draws; each shopper's drawn place is read once.
	f.clock.Advance(time.Minute)
	f.tick()
	f.same(users)
	peeks := f.scripts.count("peek")
	for _, u := range users {
		f.look(u)
	}
	assert.Equal(t, peeks, f.scripts.count("peek"), "places known, nobody admitted: from memory")

	// A second: two admitted, by the tick. They are read from Redis (their
	// pass); everyone else from memory.
	f.clock.Advance(time.Second)
	f.tick()
	peeks = f.scripts.count("peek")
	admitted := 0
	for _, u := range users {
		st := f.look(u)
		if st.Status == Admitted {
			admitted++
			assert.NotEmpty(t, st.Pass)
			continue
		}
		assert.Equal(t, Waiting, st.Status)
		assert.EqualValues(t, st.Position-3, st.Ahead)
	}
	assert.Equal(t, 2, admitted)
	assert.Equal(t, peeks+2, f.scripts.count("peek"))
	f.same(users)

	// A copy older than MaxAge is not used.
	f.clock.Advance(2 * time.Second)
	peeks = f.scripts.count("peek")
	f.look("u05")
	assert.Equal(t, peeks+1, f.scripts.count("peek"), "stale copy: Redis")

	// The admitted buy the stock out; the waiting are then sold_out, from
	// memory, and a spent ticket is closed for good.
	f.tick()
	var bought []string
	for _, u := range users {
		if st := f.peek(u); st.Status == Admitted && len(bought) < 3 {
			require.NoError(t, f.buy(u, st.Pass, "").Err)
			bought = append(bought, u)
		}
	}
	require.Len(t, bought, 3)
	f.tick()
	f.same(users)
	peeks = f.scripts.count("peek")
	soldOut := 0
	for _, u := range users {
		switch st := f.look(u); st.Status {
		case SoldOut:
			soldOut++
			assert.EqualValues(t, 5000, st.RetryAfterMS)
		case Closed:
			assert.Equal(t, "pass_used", st.Reason)
		default:
			assert.Equal(t, Admitted, st.Status, "an admitted ticket keeps its pass to its expiry")
		}
	}
	assert.Equal(t, 17, soldOut)
	assert.LessOrEqual(t, f.scripts.count("peek")-peeks, 3, "only the admitted ones' passes are read")
}

// A room whose state was lost and made again is a new room: the places
// remembered from the old one are not used.
func TestBoardForgetsPlacesOfALostRoom(t *testing.T) {
	f := newBoardFixture(t, 10, catalog.Room{Mode: catalog.RoomFIFO})
	for _, u := range []string{"alice", "bob"} {
		_, err := f.board.Join(t.Context(), f.sku.ID, u)
		require.NoError(t, err)
	}
	f.clock.Advance(time.Minute)
	f.tick()
	assert.Equal(t, Waiting, f.look("bob").Status)

	k := f.room.keys(f.sku.ID)
	rdb := f.room.rdb
	require.NoError(t, rdb.Del(t.Context(), k.meta, k.who, k.pre, k.line, k.passes, k.expired, k.valid).Err())
	_, err := f.board.Join(t.Context(), f.sku.ID, "carol") // a new room state
	require.NoError(t, err)
	f.tick()
	_, err = f.board.Peek(t.Context(), f.sku.ID, "bob")
	require.ErrorIs(t, err, ErrNoTicket, "bob's ticket went with the lost state")
}

// Ticks run by the board itself, with many shoppers looking at once, admit
// in order and answer each shopper consistently; Close stops them.
func TestBoardTicksUnderConcurrentLooks(t *testing.T) {
	f := newFixture(t, 1000, 1, catalog.Room{Mode: catalog.RoomFIFO, AdmitPerSecond: 100_000, Overbook: 1})
	b := NewBoard(f.room, BoardOptions{Tick: time.Millisecond})
	defer b.Close()
	for i := range 50 {
		_, err := b.Join(t.Context(), f.sku.ID, fmt.Sprintf("u%02d", i))
		require.NoError(t, err)
	}
	f.clock.Advance(time.Minute)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			u := fmt.Sprintf("u%02d", i)
			for range 40 {
				st, err := b.Peek(t.Context(), f.sku.ID, u)
				if !assert.NoError(t, err) {
					return
				}
				assert.EqualValues(t, i+1, st.Position)
				if st.Status == Admitted {
					return
				}
				assert.Equal(t, Waiting, st.Status)
				f.clock.Advance(time.Millisecond)
			}
		})
	}
	wg.Wait()
	b.Close() // returns once every tick has stopped
	st, err := b.Peek(t.Context(), f.sku.ID, "u01")
	require.NoError(t, err, "a closed board answers from Redis")
	assert.Equal(t, Admitted, st.Status)
}

// Concurrent joins of one room share script calls: every shopper gets one
// ticket and one place, a shopper joining twice at once gets the same
// ticket, and the tickets issued are counted once.
func TestBoardCombinesConcurrentJoins(t *testing.T) {
	f := newBoardFixture(t, 1000, catalog.Room{Mode: catalog.RoomFIFO})
	const shoppers = 300
	got := make([]Status, 2*shoppers)
	var wg sync.WaitGroup
	for i := range 2 * shoppers {
		wg.Go(func() {
			st, err := f.board.Join(t.Context(), f.sku.ID, fmt.Sprintf("u%03d", i%shoppers))
			assert.NoError(t, err)
			got[i] = st
		})
	}
	wg.Wait()
	places, tickets := map[int64]bool{}, map[string]bool{}
	for i := range shoppers {
		a, b := got[i], got[i+shoppers]
		assert.Equal(t, a.Ticket, b.Ticket, "shopper %d joined twice: one ticket", i)
		assert.Equal(t, a.Position, b.Position)
		assert.False(t, places[a.Position] || tickets[a.Ticket], "place %d / ticket %s given twice", a.Position, a.Ticket)
		places[a.Position], tickets[a.Ticket] = true, true
		assert.True(t, a.Position >= 1 && a.Position <= shoppers)
	}
	calls := f.scripts.count("join")
	assert.Less(t, calls, 2*shoppers, "joins shared calls")
	t.Logf("%d joins in %d script calls", 2*shoppers, calls)
	rep, err := f.room.Audit(t.Context(), f.sku, nil)
	require.NoError(t, err)
	assert.EqualValues(t, shoppers, rep.Joined)
}

// The join line keeps at most maxJoinCalls calls in flight, answers every
// join from the call that carried it, and ends with no turn held, however
// the joins arrive.
func TestJoinLineBoundsItsCallsAndAnswersEveryJoin(t *testing.T) {
	var l joinLine
	var inFlight atomic.Int64
	var mu sync.Mutex
	most := int64(0)
	carried := map[string]int{}
	run := func(_ context.Context, users []visitor) (*reply, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		mu.Lock()
		most = max(most, n)
		mu.Unlock()
		time.Sleep(time.Millisecond)
		rep := &reply{shoppers: make([]shopperReply, len(users))}
		mu.Lock()
		defer mu.Unlock()
		for i, u := range users {
			carried[u.user]++
			// Each join's proof of work goes with its own shopper.
			assert.Equal(t, "p-"+u.user, u.proof)
			rep.shoppers[i] = shopperReply{found: true, ticket: "t-" + u.user}
		}
		return rep, nil
	}
	const joins = 2000
	var wg sync.WaitGroup
	for i := range joins {
		wg.Go(func() {
			if i%7 == 0 {
				time.Sleep(time.Duration(i%5) * 100 * time.Microsecond)
			}
			u := fmt.Sprintf("u%04d", i)
			_, one, err := l.join(t.Context(), visitor{user: u, proof: "p-" + u}, run)
			assert.NoError(t, err)
			assert.Equal(t, "t-"+u, one.ticket)
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, most, int64(maxJoinCalls))
	assert.Greater(t, most, int64(1), "calls overlapped")
	assert.Len(t, carried, joins)
	for u, n := range carried {
		assert.Equal(t, 1, n, "%s carried once", u)
	}
	assert.Zero(t, l.running)
	assert.Empty(t, l.waiting)
}
