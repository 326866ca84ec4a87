package main

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

//go:embed room.lua
var roomLua []byte

// roomPollers is how many shoppers wait in the room of the poll and rejoin
// runs.
const roomPollers = 20_000

// roomRuns is the -room run: what a waiting room costs over HTTP, with the
// shipped defaults, in rounds. Each round measures the ceiling and the
// sold-out buy answer (the answer a crowd gets today once a sale is sold
// out), then a crowd of shoppers waiting in a room looking at their place
// (GET .../queue), the same crowd joining again (POST .../queue: a retry,
// or a client that polls by joining), new shoppers joining, and the
// hot-SKU buy without a room and with a waiting room pass (-room-looks
// leaves out the buys, -room-buys runs only them). Each target is a ratio
// of two rows of the same round.
func (b *bench) roomRuns(out io.Writer) error {
	if b.cfg.roomBuys && b.cfg.roomLooks {
		return errors.New("-room-buys and -room-looks each leave out what the other runs: give one")
	}
	var rounds []roomRound
	if b.cfg.roomBuys {
		b.fastestBuy = 25_000 // no join run to size the first pool from
	}
	for i := range b.cfg.roomRounds {
		var r roomRound
		if !b.cfg.roomBuys {
			if err := b.soldOutAndCeiling(out); err != nil {
				return err
			}
			r.ceiling, r.soldOut = b.ceiling[b.conns], b.rows[len(b.rows)-1].rate
			var err error
			if r.poll, err = b.roomLooks(out, "poll"); err != nil {
				return err
			}
			if r.rejoin, err = b.roomLooks(out, "rejoin"); err != nil {
				return err
			}
			if r.join, err = b.roomLooks(out, "join"); err != nil {
				return err
			}
			if r.floor, err = b.durableFloor(out); err != nil {
				return err
			}
		}
		if !b.cfg.roomLooks {
			if err := b.roomBuyPair(out, i, &r); err != nil {
				return err
			}
		}
		rounds = append(rounds, r)
		if b.cfg.roomBuys {
			fmt.Fprintf(out, "round %d: buy with a pass / without: rate %.3f, Redis per order %.1f / %.1f µs\n",
				i+1, r.pass/r.plain, r.passRedis, r.plainRedis)
			continue
		}
		fmt.Fprintf(out, "round %d: × ceiling: sold-out buy %.2f, look %.2f, join again %.2f, join %.2f (durable floor %.2f); join / durable floor %.2f",
			i+1, r.soldOut/r.ceiling, r.poll/r.ceiling, r.rejoin/r.ceiling, r.join/r.ceiling, r.floor/r.ceiling, r.join/r.floor)
		if !b.cfg.roomLooks {
			fmt.Fprintf(out, "; buy with a pass / without %.3f", r.pass/r.plain)
		}
		fmt.Fprintln(out)
	}
	// Each target is a ratio of two rows of one round (the machine's load
	// moves both alike), and the median of the rounds' ratios.
	var look, rejoin, join, pass, passRedis []float64
	for _, r := range rounds {
		if !b.cfg.roomLooks {
			pass = append(pass, r.pass/r.plain)
			passRedis = append(passRedis, r.passRedis/r.plainRedis)
		}
		if !b.cfg.roomBuys {
			look = append(look, r.poll/r.soldOut)
			rejoin = append(rejoin, r.rejoin/r.soldOut)
			join = append(join, r.join/r.floor)
		}
	}
	if !b.cfg.roomBuys {
		b.checks = append(b.checks,
			check{"a look at the room ≥ 0.95× the sold-out buy answer (median of the rounds' ratios)",
				fmt.Sprintf("%.2f (rounds: %s)", median(look), joinRatios(look)), median(look) >= 0.95},
			check{"a join by a shopper who holds a ticket ≥ 0.95× the sold-out buy answer (median of the rounds' ratios)",
				fmt.Sprintf("%.2f (rounds: %s)", median(rejoin), joinRatios(rejoin)), median(rejoin) >= 0.95},
			check{"a join that issues a ticket ≥ 0.8× the durable floor (median of the rounds' ratios)",
				fmt.Sprintf("%.2f (rounds: %s)", median(join), joinRatios(join)), median(join) >= 0.8})
	}
	if !b.cfg.roomLooks {
		b.checks = append(b.checks,
			check{"a buy with a pass ≥ 0.95× a buy without (hot SKU, lock, defaults; median of the rounds' ratios)",
				fmt.Sprintf("%.3f (rounds: %s; Redis per order with / without: %.3f, rounds %s)", median(pass), joinRatios(pass),
					median(passRedis), joinRatios(passRedis)), median(pass) >= 0.95})
	}
	return b.finish(out)
}

// roomRound is what one round of the -room run measured.
type roomRound struct {
	ceiling, soldOut, poll, rejoin, join, floor, plain, pass float64
	// Redis CPU per order, from the start of the load until the last
	// order was in SQL, of each variant (mean of its two runs).
	plainRedis, passRedis float64
}

// roomBuyPair runs round i's hot-SKU buys without a room and with a pass,
// ABBA, into r.
func (b *bench) roomBuyPair(out io.Writer, i int, r *roomRound) error {
	// Both servers first admit the same crowd to a room, so that the
	// two differ by the pass alone. Each run leaves its orders, passes
	// and shoppers in Redis, and a run pays for what Redis holds (the
	// second of a pair took 5-8 µs more Redis per order, whichever
	// variant it was): the pair runs in both orders (ABBA), which
	// cancels that drift, and each variant's rate is its two runs' mean.
	plain := variant{strategy: "lock", batch: 64, skus: 1, defaults: true, roomBeside: true}
	pass := variant{strategy: "lock", batch: 64, skus: 1, defaults: true, room: true}
	order := []variant{plain, pass, pass, plain}
	if i%2 == 1 {
		order = []variant{pass, plain, plain, pass}
	}
	// Enough passes for half again the fastest buy run so far (a run
	// that ran out would send spent passes).
	b.passPool = int(1.5*max(r.join, r.soldOut*0.5, b.fastestBuy)*b.cfg.duration.Seconds()) + 1000
	for _, v := range order {
		if err := b.inStock(out, v); err != nil {
			return err
		}
		last := b.rows[len(b.rows)-1]
		b.fastestBuy = max(b.fastestBuy, last.rate)
		if v.room {
			r.pass += last.rate / 2
			r.passRedis += last.redisPerOrder / 2
		} else {
			r.plain += last.rate / 2
			r.plainRedis += last.redisPerOrder / 2
		}
	}
	return nil
}

// roomLooks measures mode ("poll", "rejoin" or "join") on a SKU with a
// waiting room: poll, roomPollers shoppers who joined before the run look
// at their place round-robin; rejoin, they join again; join, every request
// is a new shopper joining. The room admits one shopper a second, so the
// crowd keeps waiting.
func (b *bench) roomLooks(out io.Writer, mode string) (float64, error) {
	p, a, err := b.server("room-"+mode, []string{"serve"})
	if err != nil {
		return 0, err
	}
	defer b.stopServer(p)
	id, err := a.seedRoom("room "+mode, 10, map[string]any{"mode": "fifo", "admit_per_second": 1, "pass_ttl": "60s", "overbook": 1})
	if err != nil {
		return 0, err
	}
	b.skus = append(b.skus, id)
	b.runs++
	prefix := fmt.Sprintf("%s-r%d", b.tag, b.runs)
	users := 0
	if mode != "join" {
		users = roomPollers
		if _, err := a.joinAll(id, prefix, users, false); err != nil {
			return 0, err
		}
	}
	before, _ := a.outcomes()
	c0 := b.cpuNow(p)
	r, err := b.runScript(p.url, "room.lua", roomLua, b.cfg.duration, "LB_ROOM_MODE="+mode,
		"LB_SKU="+strconv.FormatInt(id, 10), "LB_PREFIX="+prefix, "LB_USERS="+strconv.Itoa(max(users, 1)))
	if err != nil {
		return 0, err
	}
	c1 := b.cpuNow(p)
	after, _ := a.outcomes()
	rss := b.stopServer(p)
	what := map[string]string{"poll": fmt.Sprintf("look at the room, %d waiting shoppers", users),
		"rejoin": fmt.Sprintf("join again, %d waiting shoppers", users), "join": "join the room, a new shopper each"}[mode]
	ans := answers(diff(after, before), r)
	if r.Non2xx > 0 {
		ans = strings.TrimPrefix(ans+fmt.Sprintf(", %d not 2xx", r.Non2xx), ", ")
	}
	b.rows = append(b.rows, row{name: fmt.Sprintf("%s, defaults, -c%d", what, b.conns), rate: r.rate(), p50: us(r.P50US), p99: us(r.P99US),
		ceiling: b.ceiling[b.conns], cpu: b.cpuSplit(c0, c1, r), answers: ans, rss: rss})
	fmt.Fprintf(out, "%-40s %8.0f req/s (%.2f× ceiling)  p50 %s p99 %s  %s  CPUs: %s\n", "room "+mode, r.rate(), r.rate()/b.ceiling[b.conns],
		us(r.P50US), us(r.P99US), ans, b.cpuSplit(c0, c1, r))
	return r.rate(), nil
}

// durableFloor measures the ceiling server's durable floor (runCeiling):
// every request a new shopper whose one HSETNX is in Redis before the
// answer, group-committed, and nothing else. A join that issues a ticket
// can cost no less on this machine.
func (b *bench) durableFloor(out io.Writer) (float64, error) {
	c, err := b.startCeiling()
	if err != nil {
		return 0, err
	}
	defer c.stop()
	b.runs++
	c0 := b.cpuNow(c)
	r, err := b.runScript(c.url, "room.lua", roomLua, b.cfg.duration, "LB_ROOM_MODE=join", "LB_SKU=1",
		"LB_PREFIX="+fmt.Sprintf("%s-r%d", b.tag, b.runs), "LB_USERS=1")
	if err != nil {
		return 0, err
	}
	c1 := b.cpuNow(c)
	b.rows = append(b.rows, row{name: fmt.Sprintf("durable floor: Gin handler, one group-committed HSETNX per request, -c%d", b.conns),
		rate: r.rate(), p50: us(r.P50US), p99: us(r.P99US), ceiling: b.ceiling[b.conns], cpu: b.cpuSplit(c0, c1, r),
		answers: fmt.Sprintf("%d not 2xx", r.Non2xx)})
	fmt.Fprintf(out, "%-40s %8.0f req/s (%.2f× ceiling)  p50 %s p99 %s  CPUs: %s\n", "durable floor", r.rate(), r.rate()/b.ceiling[b.conns],
		us(r.P50US), us(r.P99US), b.cpuSplit(c0, c1, r))
	return r.rate(), nil
}

// seedRoom creates a SKU on sale for the next hours with a waiting room
// opened a minute ago.
func (a *api) seedRoom(name string, stock int64, room map[string]any) (int64, error) {
	now := time.Now().UTC()
	room["opens_at"] = now.Add(-2 * time.Minute)
	body, _ := json.Marshal(map[string]any{"name": name, "price_cents": 99900, "stock": stock, "per_user_limit": 1,
		"starts_at": now.Add(-time.Minute), "ends_at": now.Add(6 * time.Hour), "waiting_room": room})
	req, _ := http.NewRequest("POST", a.url+"/admin/skus", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	var sku struct {
		ID int64 `json:"id"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &sku) != nil {
		return 0, fmt.Errorf("seed %q: %d %s", name, resp.StatusCode, raw)
	}
	return sku.ID, nil
}

// joinAll joins n shoppers "<prefix>-<i>" to the room of sku, 64 at a time,
// and returns the passes of those admitted at once ("user\tpass" lines;
// with wantPass every one must be).
func (a *api) joinAll(sku int64, prefix string, n int, wantPass bool) ([]string, error) {
	var next atomic.Int64
	var mu sync.Mutex
	var lines []string
	var firstErr error
	var wg sync.WaitGroup
	url := fmt.Sprintf("%s/api/v1/skus/%d/queue", a.url, sku)
	for range 64 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				user := fmt.Sprintf("%s-%d", prefix, i)
				st, err := a.join(url, user)
				if err == nil && wantPass && st.Pass == "" {
					err = fmt.Errorf("%s joined but was not admitted: %+v", user, st)
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if st.Pass != "" {
					lines = append(lines, user+"\t"+st.Pass)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return lines, firstErr
}

type roomStatus struct {
	Status string `json:"status"`
	Pass   string `json:"pass"`
}

func (a *api) join(url, user string) (roomStatus, error) {
	for attempt := 0; ; attempt++ {
		req, _ := http.NewRequest("POST", url, nil)
		req.Header.Set("X-User-ID", user)
		resp, err := a.client.Do(req)
		if err != nil {
			return roomStatus{}, err
		}
		raw, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		var st roomStatus
		if resp.StatusCode == http.StatusOK && json.Unmarshal(raw, &st) == nil {
			return st, nil
		}
		if resp.StatusCode != http.StatusServiceUnavailable || attempt == 20 {
			return st, fmt.Errorf("join %s: %d %s", user, resp.StatusCode, raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// seedPassRoom creates the in-stock SKU of a buy-with-a-pass run: a waiting
// room that admits everyone at once (fifo, 100,000 a second, a pass for
// every unit) and b.passPool shoppers admitted in it, whose passes it
// writes to a file for room.lua.
func (b *bench) seedPassRoom(a *api, name string) (id int64, env []string, err error) {
	id, err = a.seedRoom(name, b.cfg.stock, map[string]any{"mode": "fifo", "admit_per_second": 100_000, "pass_ttl": "30m", "overbook": 1})
	if err != nil {
		return 0, nil, err
	}
	b.runs++
	prefix := fmt.Sprintf("%s-r%d", b.tag, b.runs)
	start := time.Now()
	lines, err := a.joinAll(id, prefix, b.passPool, true)
	if err != nil {
		return 0, nil, err
	}
	// One file per wrk thread, the lines dealt out in turn.
	file := filepath.Join(b.dir, "passes-"+prefix+".tsv")
	for t := range b.cfg.threads {
		f, err := os.Create(file + "." + strconv.Itoa(t))
		if err != nil {
			return 0, nil, err
		}
		w := bufio.NewWriter(f)
		for i := t; i < len(lines); i += b.cfg.threads {
			_, _ = w.WriteString(lines[i] + "\n")
		}
		if err := errors.Join(w.Flush(), f.Close()); err != nil {
			return 0, nil, err
		}
	}
	fmt.Printf("%d shoppers admitted with a pass in %.1fs\n", len(lines), time.Since(start).Seconds())
	return id, []string{"LB_ROOM_MODE=buy", "LB_SKU=" + strconv.FormatInt(id, 10), "LB_PASSES=" + file}, nil
}
