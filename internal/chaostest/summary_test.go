package chaostest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
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
	l := a.l
	var b strings.Builder
	identity := "X-User-ID"
	if l.spec.jwt {
		identity = "JWT"
	}
	fmt.Fprintf(&b, "chaos summary of lane %s (%s shoppers, wait_replicas %d): seed %d, duration %s, %d phases, wall %s\n",
		l.spec.name, identity, l.spec.waitReplicas, l.s.seed, l.s.duration, len(l.phases), time.Since(runStart).Round(time.Second))
	for _, sku := range l.skus {
		last := a.final.skus[sku.id]
		fmt.Fprintf(&b, "  sku %d: %d bucket(s), stock %d -> %d, sold %d, per-user limit %d\n", sku.id, sku.buckets, sku.stock, last.total, last.sold, sku.limit)
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
		if o.badToken != "" {
			out += " (" + o.badToken + " token)"
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
	fmt.Fprintf(&b, "  explained by the replacement of a live Sentinel primary (not violations; docs/design/guarantees.md):\n")
	list("  accepted while the old primary still answered, not in MySQL", a.lostLive)
	list("  refused by the stock guard after the replacement began", a.refusedLive)
	list("  request ids the replacement forgot, replayed into another order", a.ridLive)
	fmt.Fprintf(&b, "  explained by an operator's delete of a dead letter (not violations):\n")
	list("  accepted, deleted with their dead letter", a.gone)
	list("  request ids replayed after their order was deleted", a.ridGone)
	l.deadMu.Lock()
	letters, inLetters := len(l.dead), 0
	for _, d := range l.dead {
		inLetters += len(d.orders)
	}
	l.deadMu.Unlock()
	fmt.Fprintf(&b, "  dead letters listed: %d, holding %d orders; orders deleted with them: %d\n", letters, inLetters, len(a.deleted))
	list("reconciled at a barrier, as docs/design/guarantees.md allows (not violations)", l.repairs)

	var checked, unchecked, excused, splits int
	var slowest time.Duration
	results := map[porcupine.CheckResult]int{}
	for _, r := range lin {
		checked += r.ops
		unchecked += r.unchecked
		excused += r.excused
		splits += r.splits
		results[r.result]++
		slowest = max(slowest, r.took)
	}
	fmt.Fprintf(&b, "  linearizability: %d segments (sku x phase), %v; %d operations checked, %d after a data loss or failover not checked, %d sold_out of split SKUs excused (a move held up or a cut under way); %d splits; slowest check %s\n",
		len(lin), results, checked, unchecked, excused, splits, slowest.Round(time.Millisecond))
	for _, r := range lin {
		if r.result != porcupine.Ok || r.took > 5*time.Second {
			fmt.Fprintf(&b, "    sku %d phase %d: %s, %d operations in %s, %d rounds, %d splits (%s) %s\n", r.sku, r.phase, r.result, r.ops, r.took.Round(time.Millisecond), r.rounds, r.splits, countLine(r.kinds), r.file)
		}
	}

	limit, growth := rssLimits()
	fmt.Fprintf(&b, "  memory (VmRSS):\n")
	for _, p := range l.procs {
		r := l.rss[p.Name]
		fmt.Fprintf(&b, "    %s: start %d MiB, end %d MiB (%d starts)\n", p.Name, r[0]>>10, r[1]>>10, p.Starts())
		if r[1] > limit || (r[0] > 0 && r[1] > growth*r[0]) {
			l.viol.add("memory", "%s: RSS %d KiB at the end (start %d KiB; limit %d KiB or %dx)", p.Name, r[1], r[0], limit, growth)
		}
	}

	vs := l.viol.all()
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
	l.t.Log(b.String())
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
	name := filepath.Join(os.TempDir(), fmt.Sprintf("seckill-chaos-%d-%s.txt", a.l.s.seed, a.l.spec.name))
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d duration %s lane %s\n\nviolations:\n", a.l.s.seed, a.l.s.duration, a.l.spec.name)
	for _, v := range vs {
		fmt.Fprintf(&b, "[%s] %s\n", v.kind, v.msg)
	}
	fmt.Fprintf(&b, "\nphases:\n")
	for _, p := range a.l.phases {
		fmt.Fprintf(&b, "phase %d %s..%s, barrier snapshot at %s\n", p.n, clock(p.from), clock(p.to), clock(a.l.snaps[p.n].at))
	}
	fmt.Fprintf(&b, "\nfaults:\n")
	for _, f := range a.faults {
		fmt.Fprintf(&b, "%s\n", f)
	}
	fmt.Fprintf(&b, "\nrepaired at barriers:\n")
	for _, r := range a.l.repairs {
		fmt.Fprintf(&b, "%s\n", r)
	}
	fmt.Fprintf(&b, "\ndead letters listed:\n")
	a.l.deadMu.Lock()
	for _, id := range sortedKeys(a.l.dead) {
		d := a.l.dead[id]
		fmt.Fprintf(&b, "%s sku=%d type=%s first listed %s orders:", id, d.sku, d.typ, clock(d.seen))
		for _, t := range d.orders {
			fmt.Fprintf(&b, " %s(user=%s qty=%d rid=%q)", t.OrderID, t.User, t.Qty, t.RequestID)
		}
		fmt.Fprintf(&b, "\n")
	}
	a.l.deadMu.Unlock()
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
	// The servers' logs, which name the cause of a 500 by its request id.
	for _, p := range a.l.procs {
		_ = os.WriteFile(filepath.Join(os.TempDir(), fmt.Sprintf("seckill-chaos-%d-%s.log", a.l.s.seed, p.Name)), p.Log(), 0o644)
	}
	return name + fmt.Sprintf(" (server logs: seckill-chaos-%d-%s-<n>.log)", a.l.s.seed, a.l.spec.name)
}

// totals logs the figures of the whole run — by lane, by stock bucket count
// and by fault kind — and returns the number of violations of every lane.
func totals(t *testing.T, lanes []*lane, lins [][]linResult) int {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos totals: seed %d, duration %s, wall %s\n", runSeed, lanes[0].s.duration, time.Since(runStart).Round(time.Second))
	type row struct{ skus, ops, acked, faults, viol, undecided, segments, lin int }
	var all []violation
	byLane := map[string]*row{}
	byBuckets := map[int]*row{}
	get := func(m map[int]*row, k int) *row {
		if m[k] == nil {
			m[k] = &row{}
		}
		return m[k]
	}
	type faultRow struct {
		n, ops, acked int
		took          time.Duration
	}
	byFault := map[string]*faultRow{}
	for i, l := range lanes {
		lr := &row{skus: len(l.skus)}
		byLane[l.spec.name] = lr
		buckets := map[uint64]int{}
		for _, sku := range l.skus {
			buckets[sku.id] = sku.buckets
			get(byBuckets, sku.buckets).skus++
		}
		ops, faults := l.hist.snapshot()
		for _, o := range ops {
			accepted := o.kind == opBuy && o.status == http.StatusAccepted
			lr.ops++
			br := get(byBuckets, buckets[o.sku])
			br.ops++
			if accepted {
				lr.acked++
				br.acked++
			}
			for _, f := range faults {
				if !o.call.Before(f.from) && !o.call.After(f.to) {
					fr := byFault[l.spec.name+" "+f.kind]
					if fr == nil {
						fr = &faultRow{}
						byFault[l.spec.name+" "+f.kind] = fr
					}
					fr.ops++
					if accepted {
						fr.acked++
					}
				}
			}
		}
		lr.faults = len(faults)
		for _, f := range faults {
			fr := byFault[l.spec.name+" "+f.kind]
			if fr == nil {
				fr = &faultRow{}
				byFault[l.spec.name+" "+f.kind] = fr
			}
			fr.n++
			fr.took += f.to.Sub(f.from)
		}
		for _, v := range l.viol.all() {
			lr.viol++
			if v.kind == "undecided" {
				lr.undecided++
			}
			if v.sku != 0 {
				br := get(byBuckets, buckets[v.sku])
				br.viol++
				if v.kind == "undecided" {
					br.undecided++
				}
			}
			v.msg = l.spec.name + ": " + v.msg
			all = append(all, v)
		}
		for _, r := range lins[i] {
			lr.segments++
			lr.lin += r.ops
			br := get(byBuckets, r.buckets)
			br.segments++
			br.lin += r.ops
		}
	}
	fmt.Fprintf(&b, "  %-12s %5s %8s %6s %7s %10s %9s %9s %10s\n", "lane", "skus", "ops", "202", "faults", "violations", "undecided", "segments", "lin ops")
	for _, l := range lanes {
		r := byLane[l.spec.name]
		fmt.Fprintf(&b, "  %-12s %5d %8d %6d %7d %10d %9d %9d %10d\n", l.spec.name, r.skus, r.ops, r.acked, r.faults, r.viol, r.undecided, r.segments, r.lin)
	}
	fmt.Fprintf(&b, "  %-12s %5s %8s %6s %7s %10s %9s %9s %10s\n", "buckets", "skus", "ops", "202", "", "violations", "undecided", "segments", "lin ops")
	keys := make([]int, 0, len(byBuckets))
	for k := range byBuckets {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		r := byBuckets[k]
		name := fmt.Sprint(k)
		if k == 0 {
			name = "(no sku)"
		}
		fmt.Fprintf(&b, "  %-12s %5d %8d %6d %7s %10d %9d %9d %10d\n", name, r.skus, r.ops, r.acked, "", r.viol, r.undecided, r.segments, r.lin)
	}
	fmt.Fprintf(&b, "  %-30s %6s %10s %12s %12s\n", "fault (lane kind)", "count", "time", "ops during", "202 during")
	for _, k := range sortedKeys(byFault) {
		r := byFault[k]
		fmt.Fprintf(&b, "  %-30s %6d %10s %12d %12d\n", k, r.n, r.took.Round(time.Second), r.ops, r.acked)
	}
	kinds := map[string]int{}
	for _, v := range all {
		kinds[v.kind]++
	}
	fmt.Fprintf(&b, "  violations: %d %s\n", len(all), countLine(kinds))
	t.Log(b.String())
	return len(all)
}
