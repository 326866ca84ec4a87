package room

import (
	"math"
	"time"

	"github.com/seckill/seckill/internal/catalog"
)

// Bases of a wait estimate (Status.ETABasis): what eta_ms was reckoned
// from.
const (
	// ETAStart: the line is drawn at starts_at; the estimate is the time
	// until then (and, in a fifo room, the tickets ahead at the rate).
	ETAStart = "start"
	// ETAMeasured: the tickets ahead at the rate the room admitted at over
	// the last half minute.
	ETAMeasured = "measured"
	// ETARate: the tickets ahead at the room's admission rate, as too
	// little has been measured yet (the sale has just started, or this
	// instance has just started serving the room).
	ETARate = "rate"
	// ETAHeld: the room admitted nobody for a while though tickets wait:
	// every unit is under a pass not yet spent or expired, which admits
	// again when passes are used up or expire. The estimate is the tickets
	// ahead at the admission rate, once it resumes: a lower bound.
	ETAHeld = "held"
	// ETAPaused: an operator paused admission; the estimate is the
	// tickets ahead at the admission rate, once it resumes: a lower bound.
	ETAPaused = "paused"
)

// The window a room's admission rate is measured over, the spacing of its
// samples, the least span measured, and how long a room admits nobody while
// tickets wait before its estimates say it is held.
const (
	admitWindow = 30 * time.Second
	admitSample = time.Second
	admitLeast  = 5 * time.Second
	admitHeld   = 10 * time.Second
)

// admitSamples is how many samples the window holds, and one more.
const admitSamples = int(admitWindow/admitSample) + 1

// measure is a room's measured admission rate, per second; ok when there
// is one (span is at least admitLeast).
type measure struct {
	rate float64
	span time.Duration
	ok   bool
}

// admissions measures a room's admission rate from the cursor its tick
// reads, sampled once a second while tickets wait (an empty line admits
// nobody, which says nothing of the rate). It belongs to one tick.
type admissions struct {
	samples    [admitSamples]admitSampleAt
	next, size int
	epoch      [ticketLen]byte
}

type admitSampleAt struct {
	at     time.Time
	cursor int64
}

// add records what a tick read at at, and returns the rate measured over
// the window that ends there.
func (a *admissions) add(at time.Time, cursor, waiting int64, epoch [ticketLen]byte) measure {
	if waiting <= 0 || epoch != a.epoch {
		a.size, a.epoch = 0, epoch
	}
	if a.size > 0 {
		last := a.samples[(a.next+admitSamples-1)%admitSamples]
		if cursor < last.cursor || at.Before(last.at) {
			a.size = 0 // state made again, or a clock stepped back
		}
	}
	if waiting > 0 && (a.size == 0 || at.Sub(a.samples[(a.next+admitSamples-1)%admitSamples].at) >= admitSample) {
		a.samples[a.next] = admitSampleAt{at: at, cursor: cursor}
		a.next = (a.next + 1) % admitSamples
		a.size = min(a.size+1, admitSamples)
	}
	for i := a.size; i > 0; i-- { // the oldest sample within the window
		s := a.samples[(a.next+admitSamples-i)%admitSamples]
		if span := at.Sub(s.at); span <= admitWindow {
			if span < admitLeast {
				return measure{}
			}
			return measure{rate: float64(cursor-s.cursor) / span.Seconds(), span: span, ok: true}
		}
	}
	return measure{}
}

// measured is how many tickets of rep's room wait to be admitted, as its
// admission rate is measured: none while paused, so that the measure
// starts again at the resume rather than counting the pause.
func measured(rep *reply) int64 {
	if rep.state == Paused {
		return 0
	}
	return rep.waiting
}

// estimate is how long the waiting ticket of st should expect to wait for
// its turn, in milliseconds (at least 1), and its basis: from the room's
// admission rate, or what was measured of it (m), in the room's controls'
// state.
func estimate(sku *catalog.SKU, st Status, now time.Time, rate float64, m measure, state string) (int64, string) {
	if st.Position == 0 || now.Before(sku.StartsAt) {
		ms := sku.StartsAt.Sub(now).Milliseconds()
		if st.Position > 0 { // fifo: a place from the start
			ms += turnMS(st.Ahead, rate)
		}
		return max(ms, 1), ETAStart
	}
	basis := ETARate
	switch {
	case state == Paused:
		basis = ETAPaused
	case m.ok && m.rate > 0:
		rate, basis = m.rate, ETAMeasured
	case m.ok && m.span >= admitHeld:
		basis = ETAHeld
	}
	return max(turnMS(st.Ahead, rate), 1), basis
}

// turnMS is how many milliseconds ahead tickets, and then one's own, take
// at rate: at most maxETA.
func turnMS(ahead int64, rate float64) int64 {
	return int64(min(math.Ceil(float64(ahead+1)/max(rate, 1e-3)*1000), maxETA))
}

// maxETA bounds an estimate, in milliseconds: about 31 years.
const maxETA = 1e12
