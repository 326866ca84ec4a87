package room

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
)

// Followers of a room are told from the board's copy as its tick reads
// the room: a move in the line, then sold_out once the last unit sells,
// with no look in Redis of their own; only the one whose turn came reads
// Redis, once, for their pass.
func TestFollowersAreToldFromTheBoardsCopy(t *testing.T) {
	f := newBoardFixture(t, 1, catalog.Room{Mode: catalog.RoomFIFO, AdmitPerSecond: 1, Overbook: 1})
	const n = 8
	followers := make([]*Follower, n)
	for i := range n {
		u := fmt.Sprintf("u%d", i)
		_, err := f.board.Join(t.Context(), f.sku.ID, u)
		require.NoError(t, err)
	}
	f.tick()
	for i := range n {
		fo, err := f.board.Follow(t.Context(), f.sku.ID, fmt.Sprintf("u%d", i))
		require.NoError(t, err)
		st, ok, err := fo.Next(t.Context(), time.Minute)
		require.NoError(t, err)
		require.True(t, ok, "the first status at once")
		assert.Equal(t, Waiting, st.Status)
		assert.EqualValues(t, i+1, st.Position)
		assert.EqualValues(t, i, st.Ahead)
		followers[i] = fo
	}
	_, err := f.board.Follow(t.Context(), f.sku.ID, "nobody")
	require.ErrorIs(t, err, ErrNoTicket)
	peeks := f.scripts.count("peek")

	// The start, and a second: the first is admitted.
	f.clock.Advance(time.Minute + time.Second)
	f.tick()
	next := func(from int) []Status {
		out := make([]Status, n)
		var wg sync.WaitGroup
		for i := from; i < n; i++ {
			wg.Go(func() {
				st, ok, err := followers[i].Next(t.Context(), time.Minute)
				assert.NoError(t, err)
				assert.True(t, ok)
				out[i] = st
			})
		}
		wg.Wait()
		return out
	}
	got := next(0)
	require.Equal(t, Admitted, got[0].Status)
	assert.NotEmpty(t, got[0].Pass)
	for i := 1; i < n; i++ {
		assert.Equal(t, Waiting, got[i].Status)
		assert.EqualValues(t, i-1, got[i].Ahead, "the line moved")
	}
	assert.Equal(t, peeks+1, f.scripts.count("peek"), "only the admitted shopper's pass is read in Redis")

	require.NoError(t, f.buy("u0", got[0].Pass, "").Err)
	f.tick()
	got = next(1)
	for i := 1; i < n; i++ {
		assert.Equal(t, SoldOut, got[i].Status)
		assert.EqualValues(t, i+1, got[i].Position)
	}
	assert.Equal(t, peeks+1, f.scripts.count("peek"), "sold out: from the copy")

	// Nothing new: the wait ends with nothing to tell.
	st, ok, err := followers[1].Next(t.Context(), 10*time.Millisecond)
	require.NoError(t, err)
	assert.False(t, ok, "%+v", st)

	// The sale ends: told at the next tick.
	f.clock.Advance(time.Hour)
	s := f.board.standing(f.sku.ID, f.clock.Now())
	require.False(t, f.board.refresh(f.sku.ID, s))
	got = next(1)
	for i := 1; i < n; i++ {
		assert.Equal(t, Closed, got[i].Status)
		assert.Equal(t, "sale_ended", got[i].Reason)
	}
}

// Followers are told an operator's pause and close at the tick that reads
// them: a pause as the estimate's basis, the close as closed room_closed.
func TestFollowersAreToldTheControls(t *testing.T) {
	f := newBoardFixture(t, 10, catalog.Room{Mode: catalog.RoomFIFO, AdmitPerSecond: 1, Overbook: 1})
	for _, u := range []string{"u0", "u1", "u2"} {
		_, err := f.board.Join(t.Context(), f.sku.ID, u)
		require.NoError(t, err)
	}
	f.clock.Advance(time.Minute)
	f.tick()
	fo, err := f.board.Follow(t.Context(), f.sku.ID, "u2")
	require.NoError(t, err)
	st, ok, err := fo.Next(t.Context(), time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, Waiting, st.Status)

	f.control(f.room, ActionPause)
	f.tick()
	st, ok, err = fo.Next(t.Context(), time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "told of the pause")
	assert.Equal(t, Waiting, st.Status)
	assert.Equal(t, ETAPaused, st.ETABasis)

	f.control(f.room, ActionClose)
	f.tick()
	st, ok, err = fo.Next(t.Context(), time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "told of the close")
	assert.Equal(t, Closed, st.Status)
	assert.Equal(t, roomClosed, st.Reason)
}
