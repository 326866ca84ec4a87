package catalog

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A window is judged as SQL keeps it, to the millisecond: one that ends
// within the millisecond it starts in has no length and is refused, and a
// SKU keeps its times cut to the millisecond.
func TestWindowIsJudgedToTheMillisecond(t *testing.T) {
	start := time.Date(2026, 11, 11, 0, 0, 20, 0, time.UTC)
	s := fullSpec()
	s.StartsAt, s.EndsAt = ptr(start.Add(100*time.Microsecond)), ptr(start.Add(400*time.Microsecond))
	_, err := s.New(start)
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, "ends_at must be after starts_at: the sale would run from 2026-11-11T00:00:20Z to 2026-11-11T00:00:20Z")

	s = fullSpec()
	s.StartsAt, s.EndsAt = ptr(start.Add(1234567*time.Nanosecond)), ptr(start.Add(time.Hour+999999*time.Microsecond))
	sku, err := s.New(start)
	require.NoError(t, err)
	assert.Equal(t, start.Add(time.Millisecond), sku.StartsAt)
	assert.Equal(t, start.Add(time.Hour+999*time.Millisecond), sku.EndsAt)

	_, err = (&Spec{EndsAt: ptr(sku.StartsAt.Add(300 * time.Microsecond))}).Apply(sku, start)
	assert.ErrorIs(t, err, ErrInvalid, "an end within the start's millisecond")
	next, err := (&Spec{EndsAt: ptr(sku.StartsAt.Add(1500 * time.Microsecond))}).Apply(sku, start)
	require.NoError(t, err)
	assert.Equal(t, sku.StartsAt.Add(time.Millisecond), next.EndsAt)

	s = fullSpec()
	s.WaitingRoom = &RoomSpec{OpensAt: ptr(start.Add(1500 * time.Microsecond))}
	s.StartsAt = ptr(start.Add(1900 * time.Microsecond))
	sku, err = s.New(start)
	require.NoError(t, err, "opens_at and starts_at in the same millisecond: at the start")
	assert.Equal(t, *sku.Room.OpensAt, sku.StartsAt)
}

// A waiting room's overbook is a number from 1 to MaxOverbook, or 0 (and
// negative zero) for the default: NaN and the infinities are refused.
func TestRoomOverbookIsANumberInRange(t *testing.T) {
	opens := time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0.5, MaxOverbook + 0.001, -1, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		r := RoomSpec{OpensAt: &opens, Overbook: v}
		assert.ErrorIs(t, r.validate(), ErrInvalid, "%v", v)
	}
	for _, v := range []float64{0, math.Copysign(0, -1), 1, 1.2, MaxOverbook} {
		r := RoomSpec{OpensAt: &opens, Overbook: v}
		require.NoError(t, r.validate(), "%v", v)
		assert.False(t, math.IsNaN(r.settings().Overbook))
		assert.GreaterOrEqual(t, r.settings().Overbook, 1.0, "%v", v)
	}
}

// Once a random room's seed is public (from the sale's start), a change
// that moves the start past now is refused: the next draw would be known
// in advance. Before the start, or for a fifo room, or with the start kept
// in the past, the window moves.
func TestApplyDoesNotReopenADrawnRoom(t *testing.T) {
	now := time.Date(2026, 11, 11, 12, 0, 0, 0, time.UTC)
	room := func(mode string, starts, ends time.Duration) SKU {
		return SKU{ID: 7, Name: "Sneaker", StockTotal: 10, PerUserLimit: 1, Buckets: 1, StartsAt: now.Add(starts), EndsAt: now.Add(ends),
			Room: Room{OpensAt: ptr(now.Add(starts - time.Hour)), Mode: mode}}
	}
	later := Spec{StartsAt: ptr(now.Add(time.Hour)), EndsAt: ptr(now.Add(2 * time.Hour))}
	for name, tc := range map[string]struct {
		cur     SKU
		spec    Spec
		refused bool
	}{
		"ended, moved to the future":   {room(RoomRandom, -2*time.Hour, -time.Hour), later, true},
		"live, start moved past now":   {room(RoomRandom, -time.Hour, time.Hour), Spec{StartsAt: ptr(now.Add(time.Minute))}, true},
		"started this instant":         {room(RoomRandom, 0, time.Hour), Spec{StartsAt: ptr(now.Add(time.Millisecond))}, true},
		"ended, end moved later":       {room(RoomRandom, -2*time.Hour, -time.Hour), Spec{EndsAt: ptr(now.Add(time.Hour))}, false},
		"live, start moved earlier":    {room(RoomRandom, -time.Hour, time.Hour), Spec{StartsAt: ptr(now.Add(-90 * time.Minute))}, false},
		"upcoming, start moved later":  {room(RoomRandom, time.Hour, 2*time.Hour), Spec{StartsAt: ptr(now.Add(90 * time.Minute))}, false},
		"fifo, ended, moved to future": {room(RoomFIFO, -2*time.Hour, -time.Hour), later, false},
		"no room":                      {SKU{ID: 7, Name: "x", StartsAt: now.Add(-2 * time.Hour), EndsAt: now.Add(-time.Hour), Buckets: 1}, later, false},
		"ended, renamed":               {room(RoomRandom, -2*time.Hour, -time.Hour), Spec{Name: ptr("Boot")}, false},
	} {
		_, err := tc.spec.Apply(tc.cur, now)
		if !tc.refused {
			assert.NoError(t, err, name)
			continue
		}
		assert.True(t, errors.Is(err, ErrInvalid), "%s: %v", name, err)
		assert.ErrorContains(t, err, "seed that is public", name)
		assert.ErrorContains(t, err, "create a new sku", name)
	}
}

// A waiting room's pow_bits is 0 (none) to MaxPowBits; given again in an
// update it must be the room's own, as the other settings.
func TestRoomPowBitsInRangeAndFixed(t *testing.T) {
	opens := time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)
	for _, v := range []int{-1, MaxPowBits + 1, math.MaxInt32} {
		r := RoomSpec{OpensAt: &opens, PowBits: v}
		err := r.validate()
		assert.ErrorIs(t, err, ErrInvalid, "%v", v)
		assert.ErrorContains(t, err, "waiting_room.pow_bits")
	}
	for _, v := range []int{0, 1, 20, MaxPowBits} {
		r := RoomSpec{OpensAt: &opens, PowBits: v}
		require.NoError(t, r.validate(), "%v", v)
		assert.Equal(t, v, r.settings().PowBits)
	}
	s := fullSpec()
	s.WaitingRoom = &RoomSpec{OpensAt: &opens, PowBits: 16}
	sku, err := s.New(opens)
	require.NoError(t, err)
	assert.Equal(t, 16, sku.Room.PowBits)
	_, err = (&Spec{WaitingRoom: &RoomSpec{OpensAt: &opens, PowBits: 16}}).Apply(sku, opens)
	assert.NoError(t, err, "its own room again")
	_, err = (&Spec{WaitingRoom: &RoomSpec{OpensAt: &opens}}).Apply(sku, opens)
	assert.ErrorIs(t, err, ErrInvalid, "another pow_bits")
}
