package room

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
)

// The admission rate is measured over the last half minute of a waiting
// line, and only once five seconds of it were seen; an empty line, a room
// made again, or a cursor that went back start the measure over.
func TestAdmissionsMeasureTheRateOfAWaitingLine(t *testing.T) {
	var a admissions
	e1, e2 := [ticketLen]byte{1}, [ticketLen]byte{2}
	at := time.Unix(1_000, 0)
	m := a.add(at, 0, 100, e1)
	assert.False(t, m.ok, "one sample")
	for i := 1; i <= 4; i++ {
		m = a.add(at.Add(time.Duration(i)*time.Second), int64(10*i), 100, e1)
	}
	assert.False(t, m.ok, "4 s seen")
	m = a.add(at.Add(5*time.Second), 50, 100, e1)
	require.True(t, m.ok)
	assert.InDelta(t, 10, m.rate, 1e-9)

	// Samples come once a second whatever the tick: 100 ms ticks are one.
	m = a.add(at.Add(5*time.Second+100*time.Millisecond), 51, 100, e1)
	assert.InDelta(t, 51/5.1, m.rate, 1e-9)

	// Past the window, the oldest samples leave it: 40 s at 2/s after 10/s.
	c := int64(51)
	for i := 6; i <= 45; i++ {
		c += 2
		m = a.add(at.Add(time.Duration(i)*time.Second), c, 100, e1)
	}
	require.True(t, m.ok)
	assert.InDelta(t, 2, m.rate, 1e-9)
	assert.Equal(t, admitWindow, m.span)

	// Nobody admitted for 10 s of a waiting line: a rate of 0 over 10 s.
	var h admissions
	for i := range 11 {
		m = h.add(at.Add(time.Duration(i)*time.Second), 7, 100, e1)
	}
	require.True(t, m.ok)
	assert.Zero(t, m.rate)
	assert.Equal(t, 10*time.Second, m.span)

	for name, reset := range map[string]func(a *admissions) measure{
		"empty line":  func(a *admissions) measure { return a.add(at.Add(46*time.Second), c, 0, e1) },
		"new state":   func(a *admissions) measure { return a.add(at.Add(46*time.Second), c, 100, e2) },
		"cursor back": func(a *admissions) measure { return a.add(at.Add(46*time.Second), 3, 100, e1) },
		"clock back":  func(a *admissions) measure { return a.add(at.Add(40*time.Second), c, 100, e1) },
		"line emptied": func(a *admissions) measure {
			a.add(at.Add(46*time.Second), c, 0, e1)
			return a.add(at.Add(47*time.Second), c, 5, e1)
		},
	} {
		b := a
		assert.False(t, reset(&b).ok, name)
	}
}

// A waiting ticket's estimate: until the start before the draw; then the
// tickets ahead, and its own, at the measured rate, or the room's rate
// until one is measured, which it also is while the room is held.
func TestEstimateSaysItsBasis(t *testing.T) {
	start := time.Unix(10_000, 0)
	sku := &catalog.SKU{StartsAt: start}
	for _, c := range []struct {
		st    Status
		now   time.Time
		m     measure
		state string
		ms    int64
		basis string
	}{
		{Status{}, start.Add(-90 * time.Second), measure{}, "", 90_000, ETAStart},
		{Status{Position: 5, Ahead: 4}, start.Add(-time.Second), measure{}, "", 1_000 + 500, ETAStart}, // fifo
		{Status{}, start, measure{}, "", 1, ETAStart},
		{Status{Position: 5, Ahead: 4}, start.Add(time.Second), measure{}, "", 500, ETARate},
		{Status{Position: 5, Ahead: 4}, start.Add(time.Second), measure{rate: 2, span: 5 * time.Second, ok: true}, "", 2_500, ETAMeasured},
		{Status{Position: 5, Ahead: 4}, start.Add(time.Second), measure{span: 5 * time.Second, ok: true}, "", 500, ETARate},
		{Status{Position: 5, Ahead: 4}, start.Add(time.Second), measure{span: 10 * time.Second, ok: true}, "", 500, ETAHeld},
		{Status{Position: 5, Ahead: 4}, start.Add(time.Second), measure{rate: 2, span: 5 * time.Second, ok: true}, Paused, 500, ETAPaused},
		{Status{Position: 1 << 40, Ahead: 1<<40 - 1}, start.Add(time.Second), measure{}, "", maxETA, ETARate},
		{Status{Position: 1 << 62, Ahead: 1<<62 - 1}, start.Add(time.Second), measure{rate: 1e-9, span: admitWindow, ok: true}, "", maxETA, ETAMeasured},
	} {
		ms, basis := estimate(sku, c.st, c.now, 10, c.m, c.state)
		assert.Equal(t, c.ms, ms, "%+v at %s, %+v", c.st, c.now.Sub(start), c.m)
		assert.Equal(t, c.basis, basis)
	}
}

// Answers of waiting tickets carry an estimate from the rate the board
// measured as the room admitted; an admitted ticket's does not.
func TestBoardEstimatesFromTheRateItMeasures(t *testing.T) {
	f := newBoardFixture(t, 1000, catalog.Room{Mode: catalog.RoomFIFO, AdmitPerSecond: 4, Overbook: 10})
	for i := range 100 {
		f.join(fmt.Sprintf("u%03d", i))
	}
	f.tick()
	st := f.look("u050")
	assert.Equal(t, ETAStart, st.ETABasis)
	assert.EqualValues(t, time.Minute.Milliseconds()+51*250, st.ETAMS, "a minute to the start, then 51 turns at 4/s")

	f.clock.Advance(time.Minute)
	f.tick()
	st = f.look("u050")
	assert.Equal(t, ETARate, st.ETABasis, "nothing measured yet")
	assert.EqualValues(t, st.Ahead+1, st.ETAMS/250)

	for range 6 {
		f.clock.Advance(time.Second)
		f.tick()
	}
	st = f.look("u050")
	assert.Equal(t, Waiting, st.Status)
	assert.Equal(t, ETAMeasured, st.ETABasis)
	assert.EqualValues(t, (st.Ahead+1)*250, st.ETAMS, "4 admitted a second, as measured")

	st = f.look("u000")
	assert.Equal(t, Admitted, st.Status)
	assert.Zero(t, st.ETAMS)
	assert.Empty(t, st.ETABasis)
}
