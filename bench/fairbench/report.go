package main

// What the benchmark prints: a line per sale, the table at the end.

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// printRun prints a sale's outcome.
func (b *bench) printRun(out io.Writer, o outcome) {
	if o.skipped != "" {
		fmt.Fprintf(out, "run %d, %s: skipped: %s\n", o.run, o.mode, o.skipped)
		return
	}
	fmt.Fprintf(out, "run %d, %s: bots %d of %d units (%.1f%%; one operator at most %d), humans %d", o.run, o.mode, o.botUnits, o.total(), o.botShare(), o.opMax, o.humUnits)
	if o.soldOut > 0 {
		fmt.Fprintf(out, "; sold out %.2fs after the start", o.soldOut.Seconds())
	} else {
		fmt.Fprintf(out, "; NOT sold out")
	}
	if o.timedOut {
		fmt.Fprintf(out, " (stopped after -run-timeout)")
	}
	if len(o.sizes) > 1 {
		fmt.Fprintf(out, "; units per size %v", o.sizes)
	}
	fmt.Fprintf(out, "; SQL: %d bots, %d humans", o.sqlBots, o.sqlHums)
	if o.sqlTwice > 0 {
		fmt.Fprintf(out, ", %d shoppers with two orders", o.sqlTwice)
	}
	if o.sqlOther > 0 {
		fmt.Fprintf(out, ", %d others", o.sqlOther)
	}
	if o.mode.room() {
		fmt.Fprintf(out, "; joined after the draw: %d bots, %d humans; never joined: %d bots, %d humans; %s", o.late[0], o.late[1], o.notIn[0], o.notIn[1], o.drawNote)
	}
	if o.fivexx > 0 || o.errs > 0 {
		fmt.Fprintf(out, "; %d 5xx, %d transport errors", o.fivexx, o.errs)
	}
	if p := o.pow; p != nil {
		fmt.Fprintf(out, "\n    proof of work: %d challenges solved here in %.1f s before the opening (%.1f M hashes/s; SKUs created: %d); a human's device: %.2f s median from arrival, at most %.2f s; the last bot identity's proof %.2f s after the opening; %d proofs expired",
			b.cfg.shoppers, p.took.Seconds(), p.rate/1e6, p.tries, p.humanMed.Seconds(), p.humanMax.Seconds(), p.botLast.Seconds(), p.expired)
	}
	fmt.Fprintf(out, "\n    bots' answers: %s\n    humans' answers: %s\n", o.answers[0], o.answers[1])
}

// table prints the summary and the checks; false if one failed.
func (b *bench) table(out io.Writer, results []outcome, skipped map[mode]int, verified string) bool {
	good := true
	fmt.Fprintf(out, "%d shoppers (%d bots = %.1f%%), %d units per run%s\n\n", b.cfg.shoppers, b.cfg.bots, b.botPct(), b.cfg.units, b.tunedNote())
	fmt.Fprintln(out, "| mode | runs | bots' share of units: median (min–max) | humans' share: median (min–max) | bots' units, all runs | sold out after the start, s: median (min–max) | goal |")
	fmt.Fprintln(out, "|---|---:|---|---|---|---|---|")
	var checks []string
	var roomRuns []int
	for _, m := range modes {
		var shares, soldOut []float64
		var botU, allU int64
		runs := 0
		for _, o := range results {
			if o.mode != m {
				continue
			}
			runs++
			botU += o.botUnits
			allU += o.total()
			if o.total() > 0 {
				shares = append(shares, o.botShare())
			}
			if o.soldOut > 0 {
				soldOut = append(soldOut, o.soldOut.Seconds())
			}
		}
		if runs == 0 && skipped[m] == 0 {
			continue
		}
		var name, goal string
		switch m {
		case modeRoom:
			name = fmt.Sprintf("waiting room (random, %d/s, pass_ttl %s, overbook %g)", b.cfg.admit, b.cfg.passTTL, b.cfg.overbook)
		case modePow:
			name = fmt.Sprintf("the same room + proof of work (pow_bits %d, a %s pre-queue window)", b.cfg.powBits, b.cfg.powWindow)
		case modeDrop:
			name = fmt.Sprintf("a drop of %d sizes through one such room (per_user_limit 1 over them)", b.cfg.sizes)
		default:
			name, goal = "no waiting room", "— (measured)"
		}
		if m.room() && runs == 0 {
			goal = "— (no sale ran)"
		} else if m.room() {
			met := len(shares) == runs && math.Abs(median(shares)-b.botPct()) <= b.cfg.tolerate
			goal = fmt.Sprintf("median within %.0f%% ± %.0f points: %s", b.botPct(), b.cfg.tolerate, yes(met))
			if !slices.Contains(roomRuns, runs) {
				roomRuns = append(roomRuns, runs)
			}
		}
		if b.cfg.serveEnv != "" {
			name += ", tuned"
		}
		humans := make([]float64, len(shares))
		for i, v := range shares {
			humans[i] = 100 - v
		}
		sold := "—"
		if len(soldOut) > 0 {
			sold = fmt.Sprintf("%.2f (%.2f–%.2f)", median(soldOut), slices.Min(soldOut), slices.Max(soldOut))
		}
		if n := runs - len(soldOut); n > 0 {
			sold += fmt.Sprintf("; %d not sold out", n)
		}
		ran := strconv.Itoa(runs)
		if skipped[m] > 0 {
			ran += fmt.Sprintf(" (%d skipped)", skipped[m])
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %d of %d (%.1f%%) | %s | %s |\n", name, ran, spread(shares), spread(humans), botU, allU, pct(botU, allU), sold, goal)
	}
	fmt.Fprintln(out)
	b.preQueue(out, results)
	if b.cfg.bots > 0 && b.cfg.bots < b.cfg.shoppers {
		// The bots' share of a fair draw of units from shoppers:
		// hypergeometric.
		n, N, p := float64(b.cfg.units), float64(b.cfg.shoppers), float64(b.cfg.bots)/float64(b.cfg.shoppers)
		if n < N {
			sd := 100 * math.Sqrt(p*(1-p)*(N-n)/(N-1)/n)
			fmt.Fprintf(out, "a fair draw of %d units among these shoppers gives the bots %.1f%% ± %.1f points (1 sd) per run", b.cfg.units, 100*p, sd)
			for _, r := range roomRuns {
				fmt.Fprintf(out, "; the median of %d runs ± about %.1f", r, 1.25*sd/math.Sqrt(float64(r)))
			}
			fmt.Fprint(out, "\n\n")
		}
	}
	fivexx, errs, sqlBad, drawBad, notSold := 0, 0, 0, 0, 0
	var twice int64
	for _, o := range results {
		twice += o.sqlTwice
		fivexx += o.fivexx
		errs += o.errs
		if o.sqlBots != o.botUnits || o.sqlHums != o.humUnits || o.sqlOther != 0 {
			sqlBad++
		}
		if o.mode.room() && !o.drawOK {
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
	add("no shopper with two orders (of a drop: over its sizes)", fmt.Sprintf("%d shoppers", twice), twice == 0)
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

// preQueue prints, per mode with a room, the bots' share of the tickets
// drawn at the start and how many humans joined only after the draw: a
// server too busy to answer the humans' joins within the window (a loaded
// machine) lets the bots' early joins fill the pre-queue, and the draw,
// fair to the tickets it is given, hands them more units.
func (b *bench) preQueue(out io.Writer, results []outcome) {
	for _, m := range modes {
		var shares, late []float64
		for _, o := range results {
			if o.mode != m || !m.room() {
				continue
			}
			bots := b.cfg.bots - o.notIn[0] - o.late[0]
			hums := b.cfg.shoppers - b.cfg.bots - o.notIn[1] - o.late[1]
			if bots+hums > 0 {
				shares = append(shares, 100*float64(bots)/float64(bots+hums))
			}
			late = append(late, float64(o.late[1]))
		}
		if len(late) == 0 {
			continue
		}
		fmt.Fprintf(out, "%s: the bots' share of the tickets drawn at the start %s; humans who joined after the draw: median %.0f (%.0f–%.0f)\n",
			m, spread(shares), median(late), slices.Min(late), slices.Max(late))
	}
	fmt.Fprintln(out)
}
