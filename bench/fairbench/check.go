package main

// The checks of a sale: the drain, MySQL, the published draw, seckill verify.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
)

// drained waits until nothing of the SKU is queued, its audit is
// consistent and SQL holds orders orders.
func (b *bench) drained(id, orders int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var r struct {
			Orders       int64 `json:"orders"`
			Queued       int64 `json:"queued"`
			QueuedOrders int64 `json:"queued_orders"`
			Consistent   bool  `json:"consistent"`
		}
		status, data, err := b.adminDo(http.MethodGet, fmt.Sprintf("/admin/skus/%d/audit", id), nil, &r)
		if err == nil && status == http.StatusOK && r.Queued == 0 && r.QueuedOrders == 0 && r.Consistent && r.Orders >= orders {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("sku %d not drained in %s (want %d orders): %d %s", id, timeout, orders, status, data)
			}
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sqlCount counts the orders of the sale's SKUs in MySQL by class of
// shopper, and the shoppers with more than one of them.
func (b *bench) sqlCount(skus []int64, o *outcome) error {
	orders := map[string]int{}
	for _, id := range skus {
		if err := b.sqlUsers(id, orders); err != nil {
			return err
		}
	}
	for u, n := range orders {
		if n > 1 {
			o.sqlTwice++
		}
		switch i := strings.LastIndexByte(u, '-'); {
		case i >= 0 && strings.HasPrefix(u[i+1:], "b"):
			o.sqlBots += int64(n)
		case i >= 0 && strings.HasPrefix(u[i+1:], "h"):
			o.sqlHums += int64(n)
		default:
			o.sqlOther += int64(n)
		}
	}
	return nil
}

// sqlUsers counts the orders of SKU id in MySQL per shopper into orders.
func (b *bench) sqlUsers(id int64, orders map[string]int) error {
	rows, err := b.db.Query("SELECT user_id FROM orders WHERE sku_id = ?", id)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return err
		}
		orders[u]++
	}
	return rows.Err()
}

// checkDraw ends the sale, reads its published draw and checks it: the
// seed against the commitment published before the start, every ticket
// ours, and the buyers the head of the line the draw gives.
func (b *bench) checkDraw(s *sale) (bool, string) {
	// Ending a drop's first SKU ends the drop.
	if status, data, err := b.adminDo(http.MethodPost, fmt.Sprintf("/admin/skus/%d/end", s.id), nil, nil); err != nil || status != http.StatusOK {
		return false, fmt.Sprintf("POST /admin/skus/%d/end: %d %s %v", s.id, status, data, err)
	}
	var d struct {
		Mode       string   `json:"mode"`
		Seed       string   `json:"seed"`
		SeedSHA256 string   `json:"seed_sha256"`
		PreQueue   []string `json:"pre_queue"`
		Later      []string `json:"later"`
	}
	var status int
	var data []byte
	var err error
	for range 50 { // the end reaches the catalog cache at once here; a few tries in case
		status, data, err = b.adminDo(http.MethodGet, s.path()+"/draw", nil, &d)
		if err != nil || status != http.StatusConflict {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || status != http.StatusOK {
		return false, fmt.Sprintf("GET %s/draw: %d %.200s %v", s.path(), status, data, err)
	}
	sum := sha256.Sum256([]byte(d.Seed))
	if hex.EncodeToString(sum[:]) != d.SeedSHA256 || d.SeedSHA256 != s.seedSHA {
		return false, fmt.Sprintf("seed %s: its SHA-256 is not the commitment %s published before the start (the draw says %s)", d.Seed, s.seedSHA, d.SeedSHA256)
	}
	type keyed struct{ key, ticket string }
	pre := make([]keyed, len(d.PreQueue))
	for i, t := range d.PreQueue {
		k := sha256.Sum256([]byte(d.Seed + ":" + t))
		pre[i] = keyed{hex.EncodeToString(k[:]), t}
	}
	sort.Slice(pre, func(i, j int) bool { return pre[i].key < pre[j].key })
	line := make([]string, 0, len(pre)+len(d.Later))
	for _, k := range pre {
		line = append(line, k.ticket)
	}
	line = append(line, d.Later...)
	who := map[string]*shopper{}
	joined := 0
	for i := range s.shoppers {
		if sh := &s.shoppers[i]; sh.joined {
			who[sh.ticket] = sh
			joined++
		}
	}
	if len(line) != joined {
		return false, fmt.Sprintf("the draw has %d tickets (%d pre-queue, %d later); %d shoppers joined", len(line), len(d.PreQueue), len(d.Later), joined)
	}
	// Passes go out in line order, at most units x overbook at a time
	// (fewer as units sell): every buyer is within the first
	// floor(units x overbook) places; with overbook 1 the buyers are the
	// head of the line.
	n := int(s.accepted.Load())
	limit := min(int(math.Floor(float64(s.units)*b.cfg.overbook+1e-9)), len(line))
	for i, t := range line {
		sh := who[t]
		switch {
		case sh == nil:
			return false, fmt.Sprintf("ticket %s of the draw is not a shopper's", t)
		case sh.won && i >= limit:
			return false, fmt.Sprintf("%s bought from place %d of the line, behind the first %d", sh.user, i+1, limit)
		case !sh.won && i < n && limit == int(s.units):
			return false, fmt.Sprintf("place %d of the line (%s) did not buy, while someone further back did", i+1, sh.user)
		}
	}
	return true, fmt.Sprintf("draw ok: the seed matches its commitment; the %d buyers are within the first %d places of the line (%d pre-queue, %d later)", n, limit, len(d.PreQueue), len(d.Later))
}

// verify runs `seckill verify` on every SKU of the benchmark.
func (b *bench) verify() string {
	args := []string{"verify"}
	for _, id := range b.skus {
		args = append(args, "--sku", strconv.FormatInt(id, 10))
	}
	cmd := exec.Command(b.bin, args...) //nolint:gosec // the seckill binary this program built
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SECKILL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, b.env...)
	o, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(o)), "\n")
	last := lines[len(lines)-1]
	if err != nil {
		return "FAILED: " + last
	}
	return "ok: " + last
}

// errorLines are up to n lines of the log at level warn or error.
func errorLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var out []string
	total := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"level":"ERROR"`) || strings.Contains(line, `"level":"WARN"`) {
			total++
			if len(out) < n {
				out = append(out, line)
			}
		}
	}
	if total > len(out) {
		out = append(out, fmt.Sprintf("... %d such lines in all", total))
	}
	return strings.Join(out, "\n")
}
