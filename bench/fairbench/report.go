package main

// What the benchmark prints: a line per sale, the table at the end.

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
)

func (b *bench) printRun(out io.Writer, o outcome) {
	fmt.Fprintf(out, "run %d, %s: bots %d of %d units (%.1f%%), humans %d", o.run, modeName(o.room), o.botUnits, o.total(), o.botShare(), o.humUnits)
	if o.soldOut > 0 {
		fmt.Fprintf(out, "; sold out %.2fs after the start", o.soldOut.Seconds())
	} else {
		fmt.Fprintf(out, "; NOT sold out")
	}
	if o.timedOut {
		fmt.Fprintf(out, " (stopped after -run-timeout)")
	}
	fmt.Fprintf(out, "; SQL: %d bots, %d humans", o.sqlBots, o.sqlHums)
	if o.sqlOther > 0 {
		fmt.Fprintf(out, ", %d others", o.sqlOther)
	}
	if o.room {
		fmt.Fprintf(out, "; joined after the draw: %d bots, %d humans; never joined: %d bots, %d humans; %s", o.late[0], o.late[1], o.notIn[0], o.notIn[1], o.drawNote)
	}
	if o.fivexx > 0 || o.errs > 0 {
		fmt.Fprintf(out, "; %d 5xx, %d transport errors", o.fivexx, o.errs)
	}
	fmt.Fprintf(out, "\n    bots' answers: %s\n    humans' answers: %s\n", o.answers[0], o.answers[1])
}

// table prints the summary and the checks; false if one failed.
func (b *bench) table(out io.Writer, results []outcome, verified string) bool {
	good := true
	fmt.Fprintf(out, "%d shoppers (%d bots = %.1f%%), %d units per run%s\n\n", b.cfg.shoppers, b.cfg.bots, b.botPct(), b.cfg.units, b.tunedNote())
	fmt.Fprintln(out, "| mode | runs | bots' share of units: median (min–max) | humans' share: median (min–max) | bots' units, all runs | goal |")
	fmt.Fprintln(out, "|---|---:|---|---|---|---|")
	var checks []string
	for _, room := range []bool{true, false} {
		var shares []float64
		var botU, allU int64
		runs := 0
		for _, o := range results {
			if o.room != room {
				continue
			}
			runs++
			botU += o.botUnits
			allU += o.total()
			if o.total() > 0 {
				shares = append(shares, o.botShare())
			}
		}
		if runs == 0 {
			continue
		}
		name := "no waiting room"
		goal := "— (measured)"
		med := median(shares)
		if room {
			name = fmt.Sprintf("waiting room (random, %d/s, pass_ttl %s, overbook %g)", b.cfg.admit, b.cfg.passTTL, b.cfg.overbook)
			met := len(shares) == runs && math.Abs(med-b.botPct()) <= b.cfg.tolerate
			goal = fmt.Sprintf("median within %.0f%% ± %.0f points: %s", b.botPct(), b.cfg.tolerate, yes(met))
		}
		if b.cfg.serveEnv != "" {
			name += ", tuned"
		}
		humans := make([]float64, len(shares))
		for i, v := range shares {
			humans[i] = 100 - v
		}
		fmt.Fprintf(out, "| %s | %d | %s | %s | %d of %d (%.1f%%) | %s |\n", name, runs, spread(shares), spread(humans), botU, allU, pct(botU, allU), goal)
	}
	fmt.Fprintln(out)
	if b.cfg.bots > 0 && b.cfg.bots < b.cfg.shoppers {
		// The bots' share of a fair draw of units from shoppers:
		// hypergeometric.
		n, N, p := float64(b.cfg.units), float64(b.cfg.shoppers), float64(b.cfg.bots)/float64(b.cfg.shoppers)
		if n < N {
			sd := 100 * math.Sqrt(p*(1-p)*(N-n)/(N-1)/n)
			fmt.Fprintf(out, "a fair draw of %d units among these shoppers gives the bots %.1f%% ± %.1f points (1 sd) per run; the median of %d runs ± about %.1f\n\n",
				b.cfg.units, 100*p, sd, b.cfg.runs, 1.25*sd/math.Sqrt(float64(b.cfg.runs)))
		}
	}
	fivexx, errs, sqlBad, drawBad, notSold := 0, 0, 0, 0, 0
	for _, o := range results {
		fivexx += o.fivexx
		errs += o.errs
		if o.sqlBots != o.botUnits || o.sqlHums != o.humUnits || o.sqlOther != 0 {
			sqlBad++
		}
		if o.room && !o.drawOK {
			drawBad++
		}
		if o.total() != b.cfg.units {
			notSold++
		}
	}
	add := func(target, got string, ok bool) {
		checks = append(checks, fmt.Sprintf("| %s | %s | %s |", target, got, yes(ok)))
		good = good && ok
	}
	add("every sale sold all its units to the shoppers", fmt.Sprintf("%d of %d sales not", notSold, len(results)), notSold == 0)
	add("the 202s counted per class = the orders in MySQL per class", fmt.Sprintf("%d of %d sales differ", sqlBad, len(results)), sqlBad == 0)
	add("room: the published draw checks out (seed vs commitment; the buyers are the head of the line)", fmt.Sprintf("%d sales failed", drawBad), drawBad == 0)
	add("no 5xx answers, no transport errors", fmt.Sprintf("%d 5xx, %d transport errors", fivexx, errs), fivexx == 0 && errs == 0)
	add("seckill verify: every SKU consistent", verified, strings.HasPrefix(verified, "ok"))
	fmt.Fprintln(out, "| check | measured | met |")
	fmt.Fprintln(out, "|---|---|---|")
	for _, c := range checks {
		fmt.Fprintln(out, c)
	}
	return good
}

func pct(a, b int64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return 100 * float64(a) / float64(b)
}

func spread(v []float64) string {
	if len(v) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%% (%.1f–%.1f)", median(v), slices.Min(v), slices.Max(v))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}
