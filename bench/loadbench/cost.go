package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// costRows are the rows of the cost comparison: the hot SKU and many SKUs,
// both with the shipped defaults (the lock strategy, combining batches of
// up to 64, rate limits on, every buyer new).
var costRows = []string{"lock-b64-s1", "lock-b64-s100"}

// costSample is one row of one tree in one round.
type costSample struct {
	rate, server, redis, mysql, perTx float64
}

func (c costSample) sum() float64 { return c.server + c.redis + c.mysql }

// costRuns is the -cost run: the rows of costRows for the tree at
// cfg.costRef ("then") and at cfg.root ("now"), alternated, in
// cfg.costRounds rounds, each run on a fresh private Redis and database.
// It prints each round, then the medians and now/then.
func costRuns(cfg config, out io.Writer) error {
	then, err := filepath.Abs(cfg.costRef)
	if err != nil {
		return err
	}
	trees := []struct{ label, root string }{{"then", then}, {"now", cfg.root}}
	samples := map[string]map[string][]costSample{} // row -> tree -> rounds
	for _, r := range costRows {
		samples[r] = map[string][]costSample{}
	}
	fmt.Fprintf(out, "cost: %s (then) against %s (now), rows %s, %d rounds; load at start: %s\n",
		then, cfg.root, strings.Join(costRows, ", "), cfg.costRounds, loadavg())
	for round := 1; round <= cfg.costRounds; round++ {
		for i := range trees {
			// Which tree goes first alternates, so neither always runs
			// on a machine the other has warmed.
			tr := trees[(i+round)%2]
			var rows []row
			c := cfg
			c.root, c.costRef, c.only, c.rowsOut = tr.root, "", strings.Join(costRows, ","), &rows
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
			if len(rows) != len(costRows) {
				return fmt.Errorf("round %d, %s: %d rows, want %d", round, tr.label, len(rows), len(costRows))
			}
			for j, r := range rows {
				s := costSample{r.rate, r.serverPerOrder, r.redisPerOrder, r.mysqlPerOrder, r.ordersPerTx}
				samples[costRows[j]][tr.label] = append(samples[costRows[j]][tr.label], s)
				fmt.Fprintf(out, "round %d %-5s %-14s %8.0f orders/s  per accepted order: server %5.1f, Redis %5.1f, MariaDB %5.1f, sum %5.1f µs  (%.0f orders per SQL transaction)\n",
					round, tr.label, costRows[j], s.rate, s.server, s.redis, s.mysql, s.sum(), s.perTx)
			}
		}
	}
	fmt.Fprintf(out, "\nload at end: %s\n\n", loadavg())
	printCost(out, samples)
	return nil
}

// printCost prints the medians of each row and tree and now/then.
func printCost(out io.Writer, samples map[string]map[string][]costSample) {
	fmt.Fprintln(out, "| run | orders/s then → now (now/then) | server µs per order | Redis µs per order | MariaDB µs per order | sum µs per order | orders per SQL transaction |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|")
	for _, name := range costRows {
		then, now := samples[name]["then"], samples[name]["now"]
		cell := func(f func(costSample) float64, format string) string {
			a, b := medianOf(then, f), medianOf(now, f)
			ratio := ""
			if a > 0 {
				ratio = fmt.Sprintf(" (%.2f)", b/a)
			}
			return fmt.Sprintf(format+" → "+format+"%s", a, b, ratio)
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s | %s |\n", name,
			cell(func(c costSample) float64 { return c.rate }, "%.0f"),
			cell(func(c costSample) float64 { return c.server }, "%.1f"),
			cell(func(c costSample) float64 { return c.redis }, "%.1f"),
			cell(func(c costSample) float64 { return c.mysql }, "%.1f"),
			cell(costSample.sum, "%.1f"),
			cell(func(c costSample) float64 { return c.perTx }, "%.0f"))
	}
	fmt.Fprintln(out, "\nMedians of the rounds; CPU per accepted order from /proc, from the start of the load until the last order was in SQL.")
}

func medianOf(s []costSample, f func(costSample) float64) float64 {
	v := make([]float64, len(s))
	for i, c := range s {
		v[i] = f(c)
	}
	return median(v)
}
