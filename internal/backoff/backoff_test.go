package backoff

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDelayDoublesToTheCap(t *testing.T) {
	e := Exponential{Min: 250 * time.Millisecond, Max: 4 * time.Second}
	var got []time.Duration
	for n := -1; n < 8; n++ {
		got = append(got, e.Delay(n))
	}
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{250 * ms, 250 * ms, 500 * ms, time.Second, 2 * time.Second,
		4 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}, got)
}

func TestDelayNeverOverflows(t *testing.T) {
	for _, e := range []Exponential{
		{Min: time.Nanosecond, Max: math.MaxInt64},
		{Min: time.Second, Max: 10 * time.Minute},
		{Min: math.MaxInt64 / 3, Max: math.MaxInt64},
	} {
		prev := time.Duration(0)
		for n := range 200 {
			d := e.Delay(n)
			assert.Positive(t, d, "%v n=%d", e, n)
			assert.GreaterOrEqual(t, d, prev, "%v n=%d: never shrinks", e, n)
			assert.LessOrEqual(t, d, e.Max, "%v n=%d", e, n)
			prev = d
		}
		assert.Equal(t, e.Max, e.Delay(math.MaxInt))
	}
}

func TestMaxBelowMinCountsAsMin(t *testing.T) {
	e := Exponential{Min: time.Second, Max: time.Millisecond}
	assert.Equal(t, time.Second, e.Delay(0))
	assert.Equal(t, time.Second, e.Delay(5))
}

func TestJitteredStaysInTheUpperHalf(t *testing.T) {
	e := Exponential{Min: 2 * time.Millisecond, Max: 100 * time.Millisecond}
	for _, n := range []int{0, 1, 4, 6, 40, 1000} {
		d := e.Delay(n)
		lo, hi := d, time.Duration(0)
		for range 200 {
			j := e.Jittered(n)
			lo, hi = min(lo, j), max(hi, j)
		}
		assert.GreaterOrEqual(t, lo, d/2, "n=%d", n)
		assert.LessOrEqual(t, hi, d, "n=%d", n)
		assert.Less(t, lo, hi, "n=%d: the delays spread", n)
	}
}
