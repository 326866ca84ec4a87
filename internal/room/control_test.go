package room

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/replica"
	"github.com/seckill/seckill/internal/stock"
)

// other is a second instance of f's rooms, sharing its Redis and clock,
// with a board whose ticks the test runs.
func (f *fixture) other() (*Room, *Board) {
	f.t.Helper()
	r := New(f, f.room.rdb, replica.New(f.room.rdb, 0, 0), f.room.signer,
		Options{Prefix: f.room.o.Prefix, AdmitPerSecond: 10, Now: f.clock.Now})
	b := NewBoard(r, BoardOptions{manual: true})
	f.t.Cleanup(b.Close)
	return r, b
}

// control makes a command on f's room through r.
func (f *fixture) control(r *Room, action string, rate ...int) Controls {
	f.t.Helper()
	c := Command{Action: action}
	if len(rate) > 0 {
		c.AdmitPerSecond = &rate[0]
	}
	ctl, err := r.Control(f.t.Context(), f.sku.ID, c)
	require.NoError(f.t, err)
	return ctl
}

// tickOn runs b's tick of f's room once and returns the tickets admitted
// so far.
func (f *fixture) tickOn(b *Board) int64 {
	f.t.Helper()
	s := b.standing(f.sku.ID, f.clock.Now())
	require.True(f.t, b.refresh(f.sku.ID, s))
	c := s.copy.Load()
	require.NotNil(f.t, c)
	return c.cursor
}

// joinAll joins n shoppers u00.. and returns their names.
func (f *fixture) joinAll(n int) []string {
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("u%03d", i)
		f.join(users[i])
	}
	return users
}

// A pause stops admission on every instance at once, and what it was
// paused for earns nothing: resumed, the room admits at its rate again,
// without a burst. Passes given before stay valid, and every change is
// published with the draw.
func TestPauseStopsAdmissionOnEveryInstance(t *testing.T) {
	f := newFixture(t, 100, 1, catalog.Room{Mode: catalog.RoomFIFO, AdmitPerSecond: 10})
	a, boardA := f.other()
	b, boardB := f.other()
	users := f.joinAll(60)
	f.clock.Advance(time.Minute + time.Second)
	require.EqualValues(t, 10, f.tickOn(boardA))
	first := f.peek(users[0])
	require.Equal(t, Admitted, first.Status)

	at := f.clock.Now()
	ctl := f.control(b, ActionPause)
	assert.Equal(t, Controls{SKU: f.sku.ID, State: Paused, Changes: []Change{{At: at, Action: ActionPause}}}, ctl)
	for range 3 {
		f.clock.Advance(400 * time.Millisecond)
		assert.EqualValues(t, 10, f.tickOn(boardA), "paused: instance A admits nobody")
		assert.EqualValues(t, 10, f.tickOn(boardB), "paused: instance B admits nobody")
	}
	for _, board := range []*Board{boardA, boardB} {
		st, err := board.Peek(t.Context(), f.sku.ID, users[10])
		require.NoError(t, err)
		assert.Equal(t, Waiting, st.Status, "the next in line waits")
		assert.EqualValues(t, pausedRetry, st.RetryAfterMS)
		st, err = board.Join(t.Context(), f.sku.ID, "late")
		require.NoError(t, err)
		assert.Equal(t, Waiting, st.Status, "joins go on")
	}
	assert.Equal(t, Admitted, f.peek(users[0]).Status, "a pass given stays valid")
	assert.NoError(t, f.buy(users[0], first.Pass, "r0").Err, "and buys")

	// A long pause, with nobody looking, then resume: nothing was earned.
	f.clock.Advance(time.Minute)
	f.control(a, ActionResume)
	assert.EqualValues(t, 10, f.tickOn(boardB), "resumed: no burst for the time paused")
	f.clock.Advance(500 * time.Millisecond)
	assert.EqualValues(t, 15, f.tickOn(boardA), "then the rate again")
	f.clock.Advance(500 * time.Millisecond)
	assert.EqualValues(t, 20, f.tickOn(boardB))

	f.clock.Advance(f.sku.EndsAt.Sub(f.clock.Now()))
	d := f.published()
	require.Len(t, d.Controls, 2)
	assert.Equal(t, Change{At: at, Action: ActionPause}, d.Controls[0])
	assert.Equal(t, ActionResume, d.Controls[1].Action)
	assert.Equal(t, at.Add(time.Second*61+200*time.Millisecond), d.Controls[1].At)
}

// A rate overrides the SKU's until another rate; 0 goes back to the SKU's.
func TestRateOverridesTheSKUsRate(t *testing.T) {
	f := newFixture(t, 1000, 1, catalog.Room{Mode: catalog.RoomFIFO, AdmitPerSecond: 10})
	_, board := f.other()
	f.joinAll(200)
	f.clock.Advance(time.Minute)
	ctl := f.control(f.room, ActionRate, 50)
	assert.Equal(t, 50, ctl.AdmitPerSecond)
	assert.Equal(t, Running, ctl.State)
	require.EqualValues(t, 0, f.tickOn(board))
	f.clock.Advance(time.Second)
	assert.EqualValues(t, 50, f.tickOn(board))
	f.control(f.room, ActionPause)
	assert.Equal(t, 50, f.control(f.room, ActionResume).AdmitPerSecond, "a pause keeps the rate")
	f.clock.Advance(time.Second)
	assert.EqualValues(t, 100, f.tickOn(board))
	ctl = f.control(f.room, ActionRate, 0)
	assert.Zero(t, ctl.AdmitPerSecond, "back to the SKU's own")
	f.clock.Advance(time.Second)
	assert.EqualValues(t, 110, f.tickOn(board))
	assert.Len(t, ctl.Changes, 4)
}

// A closed room issues no ticket and admits nobody: its waiting tickets
// are closed, on the board as in Redis, while a pass given still buys.
// Nothing changes it any more.
func TestCloseClosesTheWaitingTickets(t *testing.T) {
	f := newFixture(t, 100, 1, catalog.Room{Mode: catalog.RoomFIFO, AdmitPerSecond: 2})
	_, board := f.other()
	users := f.joinAll(10)
	f.clock.Advance(time.Minute + time.Second)
	require.EqualValues(t, 2, f.tickOn(board))
	first := f.peek(users[0])
	for _, u := range users {
		_, err := board.Peek(t.Context(), f.sku.ID, u) // remembered by the board
		require.NoError(t, err)
	}

	f.control(f.room, ActionClose)
	f.clock.Advance(5 * time.Second)
	assert.EqualValues(t, 2, f.tickOn(board), "closed: nobody admitted")
	for _, u := range users[2:] {
		st := f.peek(u)
		assert.Equal(t, Closed, st.Status)
		assert.Equal(t, "room_closed", st.Reason)
		st, err := board.Peek(t.Context(), f.sku.ID, u)
		require.NoError(t, err)
		assert.Equal(t, Closed, st.Status, "from the board's copy too")
		assert.Equal(t, "room_closed", st.Reason)
	}
	st, err := board.Join(t.Context(), f.sku.ID, "late")
	require.NoError(t, err)
	assert.Equal(t, Status{Status: Closed, Reason: "room_closed"}, st, "no ticket issued")
	assert.Equal(t, Status{Status: Closed, Reason: "room_closed"}, f.peek("late"), "a look without a ticket too")
	assert.Equal(t, Admitted, f.peek(users[0]).Status)
	assert.NoError(t, f.buy(users[0], first.Pass, "r0").Err, "a given pass still buys")

	for _, action := range []string{ActionPause, ActionResume, ActionOpen} {
		_, err := f.room.Control(t.Context(), f.sku.ID, Command{Action: action})
		require.ErrorIs(t, err, ErrRoomClosed, action)
	}
	ctl := f.control(f.room, ActionClose)
	assert.Len(t, ctl.Changes, 1, "closing again changes nothing")
}

// An open room lets a buy without a pass in, as for a SKU without a room;
// every instance sees it within openFresh, and again when it is no longer
// open.
func TestOpenLetsBuysWithoutAPass(t *testing.T) {
	f := newFixture(t, 100, 1, catalog.Room{Mode: catalog.RoomFIFO, AdmitPerSecond: 2})
	other, _ := f.other()
	f.clock.Advance(time.Minute)
	_, err := other.CheckPass(t.Context(), f.sku, "alice", "")
	require.ErrorIs(t, err, ErrPassRequired, "running: a pass is needed (and read once)")

	f.control(f.room, ActionOpen)
	p, err := f.room.CheckPass(t.Context(), f.sku, "alice", "")
	require.NoError(t, err, "the instance that opened it knows at once")
	assert.Equal(t, stock.Pass{}, p)
	_, err = other.CheckPass(t.Context(), f.sku, "alice", "")
	require.ErrorIs(t, err, ErrPassRequired, "another within openFresh of its last read")
	f.clock.Advance(openFresh)
	_, err = other.CheckPass(t.Context(), f.sku, "alice", "")
	require.NoError(t, err, "and after it")
	assert.NoError(t, f.buy("alice", "", "r1").Err, "bought without a pass")

	_, err = f.room.CheckPass(t.Context(), f.sku, "bob", "not-a-pass")
	require.ErrorIs(t, err, ErrPassInvalid, "a pass sent is still checked")

	f.control(f.room, ActionResume)
	f.clock.Advance(openFresh)
	_, err = other.CheckPass(t.Context(), f.sku, "bob", "")
	require.ErrorIs(t, err, ErrPassRequired, "resumed: a pass is needed again")
}

// Bad commands are refused with nothing written; a command that changes
// nothing is answered and not recorded.
func TestBadCommandsWriteNothing(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{})
	bad := []Command{
		{Action: "stop"},
		{},
		{Action: ActionRate},
		{Action: ActionRate, AdmitPerSecond: new(-1)},
		{Action: ActionRate, AdmitPerSecond: new(catalog.MaxAdmitPerSecond + 1)},
		{Action: ActionPause, AdmitPerSecond: new(5)},
	}
	for _, c := range bad {
		_, err := f.room.Control(t.Context(), f.sku.ID, c)
		require.ErrorIs(t, err, ErrInvalidCommand, "%+v", c)
	}
	_, err := f.room.Control(t.Context(), 8, Command{Action: ActionPause})
	require.ErrorIs(t, err, catalog.ErrNotFound)
	room := f.sku.Room
	f.sku.Room = catalog.Room{}
	_, err = f.room.Control(t.Context(), f.sku.ID, Command{Action: ActionPause})
	require.ErrorIs(t, err, ErrNoRoom)
	f.sku.Room = room

	ctl := f.control(f.room, ActionResume)
	assert.Equal(t, Controls{SKU: f.sku.ID, State: Running, Changes: []Change{}}, ctl, "running already")
	f.control(f.room, ActionRate, catalog.MaxAdmitPerSecond)
	ctl = f.control(f.room, ActionRate, catalog.MaxAdmitPerSecond)
	assert.Len(t, ctl.Changes, 1, "a replay records nothing")
	n, err := f.room.rdb.Exists(t.Context(), f.room.keys(f.sku.ID).meta).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "no admission state is made for a rate")

	f.clock.Advance(time.Hour)
	_, err = f.room.Control(t.Context(), f.sku.ID, Command{Action: ActionPause})
	require.ErrorIs(t, err, ErrSaleOver)
	got, err := f.room.Controls(t.Context(), f.sku.ID)
	require.NoError(t, err)
	assert.Equal(t, ctl, got)
}

// The record is bounded: past MaxChanges a change is refused.
func TestTheRecordIsBounded(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{})
	entry, err := json.Marshal(Change{At: t0, Action: ActionPause})
	require.NoError(t, err)
	fill := make([]any, MaxChanges-1)
	for i := range fill {
		fill[i] = entry
	}
	require.NoError(t, f.room.rdb.RPush(t.Context(), f.room.keys(f.sku.ID).changes, fill...).Err())
	f.control(f.room, ActionPause)
	_, err = f.room.Control(t.Context(), f.sku.ID, Command{Action: ActionResume})
	require.ErrorIs(t, err, ErrTooManyChanges)
	ctl, err := f.room.Controls(t.Context(), f.sku.ID)
	require.NoError(t, err)
	assert.Equal(t, Paused, ctl.State, "nothing written")
	assert.Len(t, ctl.Changes, MaxChanges)
	assert.Equal(t, Paused, f.control(f.room, ActionPause).State, "a replay is still answered")
}

// Two operators' commands at once are made one after the other: the
// record shows both, and the state is the last one's.
func TestConcurrentCommandsAreSerialised(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{})
	other, _ := f.other()
	for range 10 {
		var wg sync.WaitGroup
		wg.Go(func() { f.control(f.room, ActionPause) })
		wg.Go(func() { f.control(other, ActionOpen) })
		wg.Wait()
		ctl, err := f.room.Controls(t.Context(), f.sku.ID)
		require.NoError(t, err)
		last := ctl.Changes[len(ctl.Changes)-1].Action
		assert.Equal(t, map[string]string{ActionPause: Paused, ActionOpen: Open}[last], ctl.State)
		assert.ElementsMatch(t, []string{ActionPause, ActionOpen},
			[]string{ctl.Changes[len(ctl.Changes)-2].Action, last}, "both recorded")
		f.control(f.room, ActionResume)
	}
}

// A buyer whose last order was placed while the room was open, or within
// the second every process takes to see it no longer is, needed no pass:
// the audit counts them apart, not as violations, also when nobody ever
// joined the room.
func TestTheAuditCountsTheBuyersOfAnOpenRoomApart(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{Mode: catalog.RoomFIFO})
	f.clock.Advance(time.Minute)
	before := f.buyers("early")
	f.clock.Advance(10 * time.Millisecond)
	f.control(f.room, ActionOpen)
	f.clock.Advance(time.Second)
	during := f.buyers("walkin")
	f.control(f.room, ActionRate, 50)
	f.clock.Advance(time.Second)
	f.control(f.room, ActionResume)
	f.clock.Advance(900 * time.Millisecond)
	lag := f.buyers("lagging")
	f.clock.Advance(time.Second)
	after := f.buyers("mallory")

	rep, err := f.room.Audit(t.Context(), f.sku, slices.Concat(during, lag))
	require.NoError(t, err)
	assert.EqualValues(t, 2, rep.OpenBuyers)
	assert.False(t, rep.StateLost, "nobody joined, and nobody needed to")
	assert.Zero(t, rep.Unchecked)

	f.join("alice") // the room's state is made now: mallory is checked, early is before it
	rep, err = f.room.Audit(t.Context(), f.sku, slices.Concat(before, during, lag, after))
	require.NoError(t, err)
	assert.EqualValues(t, 2, rep.OpenBuyers)
	assert.EqualValues(t, 1, rep.Unchecked)
	assert.EqualValues(t, 1, rep.NotAdmitted)
	assert.Equal(t, []string{"mallory"}, rep.Sample)
}
