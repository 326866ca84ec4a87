package room

import (
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// codes makes n priority codes for f's room.
func (f *fixture) codes(n int) []string {
	f.t.Helper()
	c, err := f.room.CreateCodes(f.t.Context(), f.sku.ID, n)
	require.NoError(f.t, err)
	require.Len(f.t, c.Codes, n)
	return c.Codes
}

func (f *fixture) joinWithCode(user, code string) Status {
	f.t.Helper()
	st, err := f.room.JoinWithCode(f.t.Context(), f.sku.ID, user, code)
	require.NoError(f.t, err)
	return st
}

// usedCodes is how many of f's codes were used, and the tickets issued.
func (f *fixture) usedCodes() (int64, int64) {
	f.t.Helper()
	c, err := f.room.CodeCounts(f.t.Context(), f.sku.ID)
	require.NoError(f.t, err)
	who, _ := f.written()
	return c.Used, who
}

// A code's ticket is admitted before every ticket of the line not yet
// admitted, once: before the start it goes first, during the sale at the
// next admission; a line ticket counts the priority tickets ahead of it;
// a retry answers the same ticket; and the published draw, with each
// priority ticket's place among the line's admissions, recomputes the
// order the room admitted in.
func TestACodeIsAdmittedAheadOfTheLine(t *testing.T) {
	f := newFixture(t, 100, 1, catalog.Room{Mode: catalog.RoomFIFO, AdmitPerSecond: 10})
	_, board := f.other()
	users := f.joinAll(30)
	codes := f.codes(3)
	alice := f.joinWithCode("alice", codes[0])
	assert.True(t, alice.Priority)
	assert.Equal(t, Waiting, alice.Status)
	assert.EqualValues(t, 1, alice.Position)
	assert.Zero(t, alice.Ahead)
	assert.EqualValues(t, 1, f.peek(users[0]).Ahead, "the line's first waits behind alice")
	assert.Equal(t, alice.Ticket, f.joinWithCode("alice", codes[0]).Ticket, "a retry")
	assert.Equal(t, alice.Ticket, f.join("alice").Ticket, "a join without the code finds it")

	var order []string // tickets in the order admitted
	admitted := map[string]bool{}
	look := func() {
		for _, u := range append([]string{"alice", "bob"}, users...) {
			st, err := f.room.Peek(t.Context(), f.sku.ID, u)
			if err == nil && st.Status == Admitted && !admitted[st.Ticket] {
				admitted[st.Ticket] = true
				order = append(order, st.Ticket)
			}
		}
	}
	f.clock.Advance(time.Minute + time.Second)
	require.EqualValues(t, 9, f.tickOn(board), "alice and 9 of the line")
	look()
	require.Equal(t, alice.Ticket, order[0])
	first := f.peek("alice")
	require.Equal(t, Admitted, first.Status)
	assert.NoError(t, f.buy("alice", first.Pass, "r-alice").Err, "a priority pass buys")

	st, err := board.Peek(t.Context(), f.sku.ID, users[9])
	require.NoError(t, err)
	require.Zero(t, st.Ahead, "next in line")
	bob := f.joinWithCode("bob", codes[1])
	assert.EqualValues(t, 2, bob.Position, "second in the priority line")
	assert.Zero(t, bob.Ahead)
	st, err = board.Peek(t.Context(), f.sku.ID, users[9])
	require.NoError(t, err)
	assert.Zero(t, st.Ahead, "the board's copy is of before bob")
	f.tickOn(board)
	st, err = board.Peek(t.Context(), f.sku.ID, users[9])
	require.NoError(t, err)
	assert.EqualValues(t, 1, st.Ahead, "bob waits ahead of the line's next")
	f.clock.Advance(200 * time.Millisecond)
	require.EqualValues(t, 10, f.tickOn(board), "bob, then one of the line")
	look()
	assert.Equal(t, bob.Ticket, order[10])

	used, who := f.usedCodes()
	assert.EqualValues(t, 2, used)
	assert.EqualValues(t, 32, who)

	f.clock.Advance(f.sku.EndsAt.Sub(f.clock.Now()))
	d := f.published()
	assert.EqualValues(t, 3, d.CodesMade)
	require.Len(t, d.Codes, 2)
	assert.Equal(t, PriorityTicket{Ticket: alice.Ticket, After: new(int64(0))}, d.Codes[0])
	assert.Equal(t, PriorityTicket{Ticket: bob.Ticket, After: new(int64(9))}, d.Codes[1])
	assert.Equal(t, order, recompute(d)[:len(order)], "the draw recomputes the order admitted")
}

// recompute is the order a published draw says its room admits in: the
// line (fifo: later), each priority ticket before the line's ticket at
// its After.
func recompute(d Draw) []string {
	line := slices.Clone(d.Later)
	if d.Mode != catalog.RoomFIFO {
		line = append(Drawn(d.Seed, d.PreQueue), d.Later...)
	}
	var out []string
	codes := d.Codes
	for i := 0; i <= len(line); i++ {
		for len(codes) > 0 && codes[0].After != nil && *codes[0].After == int64(i) {
			out = append(out, codes[0].Ticket)
			codes = codes[1:]
		}
		if i < len(line) {
			out = append(out, line[i])
		}
	}
	return out
}

// Each way a code is refused writes nothing: a malformed, unknown or used
// code, a code for a shopper with a ticket of the line, a bad count, a
// room without codes' room; a closed room answers closed and leaves its
// codes unused.
func TestBadCodesWriteNothing(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{})
	codes := f.codes(2)
	f.join("liner")
	f.joinWithCode("alice", codes[0])
	for _, c := range []struct {
		user, code string
		err        error
	}{
		{"bob", "", ErrCodeMalformed},
		{"bob", codes[0][:26], ErrCodeMalformed},
		{"bob", "C" + codes[0][1:], ErrCodeMalformed},
		{"bob", codes[0][:26] + "1", ErrCodeMalformed},
		{"bob", newCode(), ErrCodeUnknown},
		{"bob", codes[0], ErrCodeUsed},
		{"liner", codes[1], ErrCodeAfterTicket},
	} {
		_, err := f.room.JoinWithCode(t.Context(), f.sku.ID, c.user, c.code)
		require.ErrorIs(t, err, c.err, "%s with %q", c.user, c.code)
		used, who := f.usedCodes()
		assert.EqualValues(t, 1, used, "%s with %q", c.user, c.code)
		assert.EqualValues(t, 2, who, "%s with %q", c.user, c.code)
	}
	for _, n := range []int{-1, 0, MaxCodesAtOnce + 1} {
		_, err := f.room.CreateCodes(t.Context(), f.sku.ID, n)
		require.ErrorIs(t, err, ErrInvalidCodeCount)
	}
	_, err := f.room.CreateCodes(t.Context(), 8, 1)
	require.ErrorIs(t, err, catalog.ErrNotFound)

	f.control(f.room, ActionClose)
	st := f.joinWithCode("carol", codes[1])
	assert.Equal(t, Status{Status: Closed, Reason: roomClosed}, st)
	_, err = f.room.CreateCodes(t.Context(), f.sku.ID, 1)
	require.ErrorIs(t, err, ErrRoomClosed)
	c, err := f.room.CodeCounts(t.Context(), f.sku.ID)
	require.NoError(t, err)
	assert.Equal(t, Codes{SKU: f.sku.ID, Total: 2, Used: 1}, c)

	f.sku.Room = catalog.Room{}
	_, err = f.room.CreateCodes(t.Context(), f.sku.ID, 1)
	require.ErrorIs(t, err, ErrNoRoom)
}

// A room holds at most MaxCodes codes: a request past it makes none.
func TestTheCodesAreBounded(t *testing.T) {
	testutil.SkipShort(t, "makes 10,000 codes")
	f := newFixture(t, 10, 1, catalog.Room{})
	for range MaxCodes / MaxCodesAtOnce {
		f.codes(MaxCodesAtOnce)
	}
	_, err := f.room.CreateCodes(t.Context(), f.sku.ID, 1)
	require.ErrorIs(t, err, ErrTooManyCodes)
	c, err := f.room.CodeCounts(t.Context(), f.sku.ID)
	require.NoError(t, err)
	assert.EqualValues(t, MaxCodes, c.Total)
}

// Shoppers racing with one code, on two instances: one gets its ticket,
// every other is told it was used.
func TestACodeIssuesOneTicket(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{})
	other, _ := f.other()
	code := f.codes(1)[0]
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []string
	for i := range 20 {
		wg.Go(func() {
			r := f.room
			if i%2 == 1 {
				r = other
			}
			st, err := r.JoinWithCode(t.Context(), f.sku.ID, fmt.Sprintf("s%02d", i), code)
			if err != nil {
				assert.ErrorIs(t, err, ErrCodeUsed)
				return
			}
			mu.Lock()
			won = append(won, st.Ticket)
			mu.Unlock()
		})
	}
	wg.Wait()
	assert.Len(t, won, 1)
	used, who := f.usedCodes()
	assert.EqualValues(t, 1, used)
	assert.EqualValues(t, 1, who)
}

// A paused room gives a code's ticket and admits it first on resume; the
// audit counts its buyer admitted, and the published draw, with the pause,
// recomputes the order admitted.
func TestACodeWaitsOutAPause(t *testing.T) {
	f := newFixture(t, 100, 1, catalog.Room{Mode: catalog.RoomFIFO, AdmitPerSecond: 10})
	_, board := f.other()
	users := f.joinAll(20)
	f.clock.Advance(time.Minute + time.Second)
	f.control(f.room, ActionPause)
	alice := f.joinWithCode("alice", f.codes(1)[0])
	f.clock.Advance(time.Second)
	require.Zero(t, f.tickOn(board))
	assert.Equal(t, Waiting, f.peek("alice").Status, "paused")
	f.control(f.room, ActionResume)
	f.clock.Advance(100 * time.Millisecond)
	require.Zero(t, f.tickOn(board), "alice is the one admitted")
	st := f.peek("alice")
	require.Equal(t, Admitted, st.Status)
	assert.Equal(t, alice.Ticket, st.Ticket)
	assert.Equal(t, Waiting, f.peek(users[0]).Status)
	require.NoError(t, f.buy("alice", st.Pass, "r-alice").Err)

	rep, err := f.room.Audit(t.Context(), f.sku, []Buyer{{User: "alice", Last: f.clock.Now()}})
	require.NoError(t, err)
	assert.Zero(t, rep.NotAdmitted)
	assert.EqualValues(t, 20, rep.Waiting)

	f.clock.Advance(time.Second)
	require.EqualValues(t, 10, f.tickOn(board))
	admitted := []string{alice.Ticket}
	for _, u := range users[:10] {
		admitted = append(admitted, f.peek(u).Ticket)
	}
	f.clock.Advance(f.sku.EndsAt.Sub(f.clock.Now()))
	d := f.published()
	assert.Len(t, d.Controls, 2, "the pause and the resume")
	assert.Equal(t, admitted, recompute(d)[:11], "the draw recomputes the order admitted")
}

// validCode takes exactly the codes newCode makes.
func FuzzValidCode(f *testing.F) {
	form := regexp.MustCompile(`^c[a-z2-7]{26}$`)
	f.Add(newCode())
	f.Add("")
	f.Add("c" + "aaaaaaaaaaaaaaaaaaaaaaaaa\x00")
	f.Add("cAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Fuzz(func(t *testing.T, s string) {
		if validCode(s) != form.MatchString(s) {
			t.Fatalf("validCode(%q) = %v", s, validCode(s))
		}
	})
}

// A room keeps every key of a SKU's room under the SKU's hash tag, so on
// Redis Cluster its scripts run in one slot: joins, a code, admission, a
// pause, a buy with a pass, the published draw and the audit.
func TestARoomOnRedisCluster(t *testing.T) {
	rdb, prefix := testsvc.Cluster(t)
	f := newFixtureOn(t, rdb, prefix, 100, 1, catalog.Room{AdmitPerSecond: 10})
	_, board := f.other()
	users := f.joinAll(20)
	alice := f.joinWithCode("alice", f.codes(1)[0])
	f.clock.Advance(time.Minute + time.Second)
	f.tickOn(board)
	st := f.peek("alice")
	require.Equal(t, Admitted, st.Status)
	require.NoError(t, f.buy("alice", st.Pass, "r-alice").Err)
	f.control(f.room, ActionPause)
	f.clock.Advance(time.Second)
	f.tickOn(board)
	f.control(f.room, ActionResume)
	rep, err := f.room.Audit(t.Context(), f.sku, []Buyer{{User: "alice", Last: f.clock.Now()}})
	require.NoError(t, err)
	assert.Zero(t, rep.NotAdmitted)
	assert.EqualValues(t, len(users)+1, rep.Joined)
	f.clock.Advance(f.sku.EndsAt.Sub(f.clock.Now()))
	d := f.published()
	assert.Len(t, d.PreQueue, len(users))
	assert.Equal(t, alice.Ticket, d.Codes[0].Ticket)
	assert.Len(t, d.Controls, 2)
}
