// Package clockcheck measures how far this instance's clock is from the
// clock of one Redis server that every instance reads. The sale window,
// the per-shopper rate budgets, a waiting room's start (when its pre-queue
// closes) and its passes' expiries are read from the clock of the instance
// that serves a request, so a skew between instances moves them by as
// much; the offset each instance exports shows such a skew before a sale.
package clockcheck

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

//go:embed lua/time.lua
var timeLua string

var timeScript = redis.NewScript(timeLua)

// Options configure a Checker.
type Options struct {
	// Every is how often Run measures (default 30s).
	Every time.Duration
	// Warn is the offset past which Run logs a warning (default 250ms).
	Warn time.Duration
	// Now is this instance's clock (default time.Now).
	Now func() time.Time
	Log *slog.Logger
}

// Checker measures this instance's clock against Redis's.
type Checker struct {
	rdb    redis.Scripter
	key    string
	offset prometheus.Gauge
	o      Options
}

// New returns a Checker reading the clock of the Redis node that holds
// prefix+"{clock}", with its gauge registered in reg.
func New(rdb redis.Scripter, prefix string, reg prometheus.Registerer, o Options) *Checker {
	if o.Every <= 0 {
		o.Every = 30 * time.Second
	}
	if o.Warn <= 0 {
		o.Warn = 250 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	c := &Checker{rdb: rdb, key: prefix + "{clock}", o: o,
		offset: prometheus.NewGauge(prometheus.GaugeOpts{Name: "seckill_clock_offset_seconds",
			Help: "Redis's clock minus this instance's, as last measured (the Redis node every instance reads); compare instances."})}
	reg.MustRegister(c.offset)
	return c
}

// samples is how many reads Measure takes; it keeps the one of the
// shortest round trip, whose midpoint is the best estimate.
const samples = 3

// Measure returns Redis's clock minus this instance's, and the round trip
// of the read it was taken from, which bounds its error (half of it
// either way).
func (c *Checker) Measure(ctx context.Context) (offset, rtt time.Duration, err error) {
	rtt = -1
	for range samples {
		before := c.o.Now()
		v, err := timeScript.Run(ctx, c.rdb, []string{c.key}).Int64Slice()
		after := c.o.Now()
		if err != nil {
			return 0, 0, fmt.Errorf("clockcheck: %w", err)
		}
		if len(v) != 2 {
			return 0, 0, fmt.Errorf("clockcheck: TIME answered %v", v)
		}
		d := after.Sub(before)
		if rtt < 0 || d < rtt {
			server := time.Unix(v[0], v[1]*int64(time.Microsecond))
			offset, rtt = server.Sub(before.Add(d/2)), d
		}
	}
	return offset, rtt, nil
}

// Run measures every Options.Every until ctx ends, keeping the gauge, and
// logs a warning when the offset passes Options.Warn (again only after it
// came back within it).
func (c *Checker) Run(ctx context.Context) {
	t := time.NewTicker(c.o.Every)
	defer t.Stop()
	warned := false
	for {
		offset, rtt, err := c.Measure(ctx)
		switch {
		case errors.Is(err, context.Canceled) && ctx.Err() != nil:
			return
		case err != nil:
			c.o.Log.Debug("clock check", "err", err.Error())
		default:
			c.offset.Set(offset.Seconds())
			over := offset.Abs() > c.o.Warn+rtt/2
			if over && !warned {
				c.o.Log.Warn("this instance's clock is off Redis's: keep the instances' clocks in sync (NTP); the sale window, rate budgets and waiting rooms read them",
					"offset", offset.String(), "round_trip", rtt.String())
			}
			warned = over
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
