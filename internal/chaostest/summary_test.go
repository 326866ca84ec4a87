package chaostest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// rssLimitKiB is the most resident memory a seckill process may end the
// run with; rssGrowth the most it may grow by over the run. Generous: the
// point is to catch memory that grows with the number of operations.
func rssLimits() (limitKiB int64, growth int64) {
	if serverRace() {
		return 2 << 20, 12 // the race detector's shadow memory
	}
	return 512 << 10, 10
}

// summary prints what the run did and found, and checks the memory of
// the processes.
func (a *analysis) summary(lin []linResult) {
	c := a.c
	var b strings.Builder
	fmt.Fprintf(&b, "chaos summary: seed %d, duration %s, %d phases, wall %s\n", c.s.seed, c.s.duration, len(c.phases), time.Since(runStart).Round(time.Second))
	for _, sku := range c.skus {
		last := a.final.skus[sku.id]
		fmt.Fprintf(&b, "  sku %d: stock %d -> %d, sold %d, per-user limit %d\n", sku.id, sku.stock, last.total, last.sold, sku.limit)
	}

	byKind := map[string]map[string]int{}
	for _, o := range a.ops {
		if byKind[o.kind] == nil {
			byKind[o.kind] = map[string]int{}
		}
		out := o.outcome()
		if o.kind == opBuy && o.rid != "" {
			out += " (rid)"
		}
		byKind[o.kind][out]++
	}
	fmt.Fprintf(&b, "  operations: %d\n", len(a.ops))
	for _, k := range sortedKeys(byKind) {
		fmt.Fprintf(&b, "    %-10s %s\n", k, countLine(byKind[k]))
	}

	faults := map[string]int{}
	faultTime := map[string]time.Duration{}
	for _, f := range a.faults {
		faults[f.kind]++
		faultTime[f.kind] += f.to.Sub(f.from)
	}
	fmt.Fprintf(&b, "  faults: %d\n", len(a.faults))
	for _, k := range sortedKeys(faults) {
		fmt.Fprintf(&b, "    %-14s %3d  total %s\n", k, faults[k], faultTime[k].Round(time.Millisecond))
	}
	for _, f := range a.faults {
		if f.dataLoss {
			fmt.Fprintf(&b, "    data loss: %s\n", f)
		}
	}

	orders := map[string]int{}
	for _, o := range a.final.orders {
		orders[o.status]++
	}
	fmt.Fprintf(&b, "  orders in MySQL: %s; answered 202: %d; made by a request without a clear answer: %d\n", countLine(orders), len(a.acked), a.unacked)
	list := func(name string, items []string) {
		fmt.Fprintf(&b, "  %s: %d\n", name, len(items))
		for _, s := range items[:min(len(items), 10)] {
			fmt.Fprintf(&b, "    %s\n", s)
		}
		if len(items) > 10 {
			fmt.Fprintf(&b, "    ... %d more\n", len(items)-10)
		}
	}
	fmt.Fprintf(&b, "  explained by a Redis data loss (not violations):\n")
	list("  accepted, lost with Redis", a.lost)
	list("  accepted, in Redis at the loss, refused by the stock guard", a.refusedLoss)
	list("  accepted after the loss, refused for an order from before it", a.refusedAfter)
	list("  request ids forgotten by the loss", a.ridLoss)
	list("  shoppers over the limit through an order from before the loss", a.limitLoss)

	var checked, unchecked int
	var slowest time.Duration
	results := map[porcupine.CheckResult]int{}
	for _, r := range lin {
		checked += r.ops
		unchecked += r.unchecked
		results[r.result]++
		slowest = max(slowest, r.took)
	}
	fmt.Fprintf(&b, "  linearizability: %d segments (sku x phase), %v; %d operations checked, %d after a data loss not checked; slowest check %s\n",
		len(lin), results, checked, unchecked, slowest.Round(time.Millisecond))
	for _, r := range lin {
		if r.result != porcupine.Ok || r.took > 5*time.Second {
			fmt.Fprintf(&b, "    sku %d phase %d: %s, %d operations in %s, %d rounds (%s) %s\n", r.sku, r.phase, r.result, r.ops, r.took.Round(time.Millisecond), r.rounds, countLine(r.kinds), r.file)
		}
	}

	limit, growth := rssLimits()
	fmt.Fprintf(&b, "  memory (VmRSS):\n")
	for _, p := range c.procs {
		r := c.rss[p.Name]
		fmt.Fprintf(&b, "    %s: start %d MiB, end %d MiB (%d starts)\n", p.Name, r[0]>>10, r[1]>>10, p.Starts())
		if r[1] > limit || (r[0] > 0 && r[1] > growth*r[0]) {
			c.viol.add("memory", "%s: RSS %d KiB at the end (start %d KiB; limit %d KiB or %dx)", p.Name, r[1], r[0], limit, growth)
		}
	}

	c.viol.mu.Lock()
	vs := append([]violation(nil), c.viol.list...)
	c.viol.mu.Unlock()
	kinds := map[string]int{}
	for _, v := range vs {
		kinds[v.kind]++
	}
	fmt.Fprintf(&b, "  violations: %d %s\n", len(vs), countLine(kinds))
	shown := map[string]int{}
	for _, v := range vs {
		if shown[v.kind]++; shown[v.kind] <= 6 {
			fmt.Fprintf(&b, "    [%s] %s\n", v.kind, v.msg)
		}
	}
	undecided := results[porcupine.Unknown] > 0
	if len(vs) > 0 || undecided || os.Getenv("SECKILL_CHAOS_DUMP") == "1" {
		fmt.Fprintf(&b, "  every violation and the whole history: %s\n", a.dump(vs))
	}
	c.t.Log(b.String())
}

// countLine formats counts as "a=1 b=2", largest first.
func countLine(m map[string]int) string {
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// dump writes every violation, fault and operation of the run to a file
// that outlives the test, and returns its name.
func (a *analysis) dump(vs []violation) string {
	name := filepath.Join(os.TempDir(), fmt.Sprintf("seckill-chaos-%d.txt", a.c.s.seed))
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d duration %s\n\nviolations:\n", a.c.s.seed, a.c.s.duration)
	for _, v := range vs {
		fmt.Fprintf(&b, "[%s] %s\n", v.kind, v.msg)
	}
	fmt.Fprintf(&b, "\nphases:\n")
	for _, p := range a.c.phases {
		fmt.Fprintf(&b, "phase %d %s..%s, barrier snapshot at %s\n", p.n, clock(p.from), clock(p.to), clock(a.c.snaps[p.n].at))
	}
	fmt.Fprintf(&b, "\nfaults:\n")
	for _, f := range a.faults {
		fmt.Fprintf(&b, "%s\n", f)
	}
	fmt.Fprintf(&b, "\noperations:\n")
	for _, o := range a.ops {
		fmt.Fprintf(&b, "%s\n", o)
	}
	fmt.Fprintf(&b, "\norders in MySQL at the end:\n")
	for _, id := range sortedKeys(a.final.orders) {
		o := a.final.orders[id]
		fmt.Fprintf(&b, "%s sku=%d user=%s qty=%d rid=%q status=%s created=%s persisted=%s closed=%s\n",
			id, o.sku, o.user, o.qty, o.rid, o.status, clock(o.created), clock(o.persisted), clock(o.closed))
	}
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		return "(not written: " + err.Error() + ")"
	}
	return name
}
