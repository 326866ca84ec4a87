package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// costRuns are the runs of the cost comparison, all with the shipped
// defaults (the lock strategy, combining batches of up to 64, rate limits
// on, every buyer new): the sold-out answer against the ceiling, the hot
// SKU, 100 SKUs, and one round of the flash crowd.
var costRuns = []string{"soldout", "lock-b64-s1", "lock-b64-s100", "crowd"}

// costSample is what one tree measured in one round.
type costSample struct {
	hot, many          costRow
	soldOut, ceiling   float64 // req/s
	crowdP99, crowdCap time.Duration
}

// costRow is an in-stock row: its rate and CPU per accepted order.
type costRow struct {
	rate, server, redis, mysql, perTx float64
}

func (c costRow) sum() float64 { return c.server + c.redis + c.mysql }

// sample reads a run's rows.
func sample(rows []row) (costSample, error) {
	var s costSample
	found := 0
	for _, r := range rows {
		in := costRow{r.rate, r.serverPerOrder, r.redisPerOrder, r.mysqlPerOrder, r.ordersPerTx}
		switch {
		case strings.Contains(r.name, "one hot SKU"):
			s.hot = in
		case strings.Contains(r.name, "100 SKUs"):
			s.many = in
		case strings.HasPrefix(r.name, "buy, sold-out SKU"):
			s.soldOut = r.rate
		case strings.HasPrefix(r.name, "ceiling:"):
			s.ceiling = r.rate
		case strings.HasPrefix(r.name, "flash crowd:"):
			s.crowdP99 = r.p99
		case strings.HasPrefix(r.name, "the same crowd"):
			s.crowdCap = r.p99
		default:
			continue
		}
		found++
	}
	if found != 6 {
		return s, fmt.Errorf("%d of the 6 rows of the cost runs", found)
	}
	return s, nil
}

// runCost is the -cost run: costRuns for the tree at cfg.costRef ("then")
// and at cfg.root ("now"), alternated, in cfg.costRounds rounds, each on a
// fresh private Redis and database. It prints each round, then the medians
// and now/then.
func runCost(cfg config, out io.Writer) error {
	then, err := filepath.Abs(cfg.costRef)
	if err != nil {
		return err
	}
	trees := []struct{ label, root string }{{"then", then}, {"now", cfg.root}}
	samples := map[string][]costSample{}
	fmt.Fprintf(out, "cost: %s (then) against %s (now), runs %s, %d rounds; load at start: %s\n",
		then, cfg.root, strings.Join(costRuns, ", "), cfg.costRounds, loadavg())
	for round := 1; round <= cfg.costRounds; round++ {
		for i := range trees {
			// Which tree goes first alternates, so that neither always
			// runs on a machine the other has just warmed.
			tr := trees[(i+round)%2]
			var rows []row
			c := cfg
			c.root, c.costRef, c.only, c.rowsOut, c.crowdRounds = tr.root, "", strings.Join(costRuns, ","), &rows, 1
			log, err := os.CreateTemp("", "loadbench-cost-*.log")
			if err != nil {
				return err
			}
			err = run(c, log)
			_ = log.Close()
			if err != nil {
				return fmt.Errorf("round %d, %s: %w (log %s)", round, tr.label, err, log.Name())
			}
			_ = os.Remove(log.Name())
			s, err := sample(rows)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round, tr.label, err)
			}
			samples[tr.label] = append(samples[tr.label], s)
			for _, r := range []struct {
				name string
				c    costRow
			}{{"hot SKU", s.hot}, {"100 SKUs", s.many}} {
				fmt.Fprintf(out, "round %d %-4s %-8s %6.0f orders/s  per accepted order: server %5.1f, Redis %5.1f, MariaDB %5.1f, sum %5.1f µs  (%.0f orders per SQL transaction)\n",
					round, tr.label, r.name, r.c.rate, r.c.server, r.c.redis, r.c.mysql, r.c.sum(), r.c.perTx)
			}
			fmt.Fprintf(out, "round %d %-4s sold-out %6.0f req/s (%.2f× the ceiling); flash crowd p99 %s (%.2f× the ceiling's)\n",
				round, tr.label, s.soldOut, s.soldOut/s.ceiling, ms(s.crowdP99), float64(s.crowdP99)/float64(max(s.crowdCap, 1)))
		}
	}
	fmt.Fprintf(out, "\nload at end: %s\n\n", loadavg())
	printCost(out, samples["then"], samples["now"])
	return nil
}

// printCost prints the medians of then and now, and now/then.
func printCost(out io.Writer, then, now []costSample) {
	cell := func(f func(costSample) float64, format string) string {
		a, b := medianOf(then, f), medianOf(now, f)
		ratio := ""
		if a > 0 {
			ratio = fmt.Sprintf(" (%.2f)", b/a)
		}
		return fmt.Sprintf(format+" → "+format+"%s", a, b, ratio)
	}
	fmt.Fprintln(out, "| run | orders/s then → now (now/then) | server µs per order | Redis µs per order | MariaDB µs per order | sum µs per order | orders per SQL transaction |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|")
	for _, r := range []struct {
		name string
		get  func(costSample) costRow
	}{{"hot SKU", func(c costSample) costRow { return c.hot }}, {"100 SKUs", func(c costSample) costRow { return c.many }}} {
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s | %s |\n", r.name,
			cell(func(c costSample) float64 { return r.get(c).rate }, "%.0f"),
			cell(func(c costSample) float64 { return r.get(c).server }, "%.1f"),
			cell(func(c costSample) float64 { return r.get(c).redis }, "%.1f"),
			cell(func(c costSample) float64 { return r.get(c).mysql }, "%.1f"),
			cell(func(c costSample) float64 { return r.get(c).sum() }, "%.1f"),
			cell(func(c costSample) float64 { return r.get(c).perTx }, "%.0f"))
	}
	fmt.Fprintf(out, "\nSold-out answer, × the ceiling of the same run: %s. Flash crowd p99, × the ceiling's on the same burst: %s.\n",
		cell(func(c costSample) float64 { return c.soldOut / c.ceiling }, "%.2f"),
		cell(func(c costSample) float64 { return float64(c.crowdP99) / float64(max(c.crowdCap, 1)) }, "%.2f"))
	fmt.Fprintln(out, "Medians of the rounds. CPU per accepted order from /proc, from the start of the load until the last order was in SQL.")
}

func medianOf(s []costSample, f func(costSample) float64) float64 {
	v := make([]float64, len(s))
	for i, c := range s {
		v[i] = f(c)
	}
	return median(v)
}
