package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// cmdStat is one command's line of INFO commandstats: calls and the
// microseconds Redis spent in them. Commands a script calls are counted
// under their own names as well as in the script's EVALSHA.
type cmdStat struct {
	calls, usec float64
}

// commandStats reads INFO commandstats of the Redis at addr (nil when it
// cannot be read: the figures are then left out).
func commandStats(addr string) map[string]cmdStat {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		return nil
	}
	stats := map[string]cmdStat{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var s cmdStat
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				s.calls = f
			case "usec":
				s.usec = f
			}
		}
		stats[strings.TrimPrefix(name, "cmdstat_")] = s
	}
	return stats
}

// printCommandStats prints, per order, the calls and microseconds of each
// command between two readings, most costly first.
func printCommandStats(out io.Writer, name string, before, after map[string]cmdStat, orders int64) {
	if before == nil || after == nil || orders <= 0 {
		return
	}
	type line struct {
		cmd         string
		calls, usec float64
	}
	var lines []line
	for cmd, a := range after {
		b := before[cmd]
		if a.calls > b.calls {
			lines = append(lines, line{cmd, (a.calls - b.calls) / float64(orders), (a.usec - b.usec) / float64(orders)})
		}
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].usec > lines[j].usec })
	parts := make([]string, 0, len(lines))
	for _, l := range lines {
		parts = append(parts, fmt.Sprintf("%s %.2f calls %.2f µs", l.cmd, l.calls, l.usec))
	}
	fmt.Fprintf(out, "%s Redis commands per order (INFO commandstats; a script's commands count in it too): %s\n", name, strings.Join(parts, "; "))
}
