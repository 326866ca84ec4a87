package main

// One sale and its shoppers, over HTTP.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// shopper is one simulated shopper of a sale.
type shopper struct {
	bot bool
	// op is a bot's operator, who holds botIDs identities.
	op   int
	user string
	// proof is the proof of work the shopper joins with, and solving how
	// long its device takes to find it from its arrival (for a bot, from
	// the opening, after its operator's identities before it).
	proof   string
	solving time.Duration
	joined  bool
	ticket  string
	// late: the first answer to the join had a place in the line, so the
	// ticket joined after the pre-queue was drawn (behind every pre-queue
	// ticket).
	late bool
	won  bool
}

// reply is what one request got.
type reply struct {
	status int
	// code is the error code of an error answer, or else the room status
	// (waiting, admitted, sold_out, closed) or the order status.
	code     string
	retryMS  int64         // retry_after_ms of a room answer
	retryHdr time.Duration // Retry-After (0: none)
	pos      int64
	ticket   string
	pass     string
	// challenge and bits: a proof of work to solve.
	challenge string
	bits      int
	err       error
}

// tally counts the answers of one class of shoppers.
type tally struct {
	mu   sync.Mutex
	m    map[string]int
	n    int
	errs int
	// fivexx counts 5xx answers, which a sale should not give here.
	fivexx int
}

func (t *tally) add(what string, r reply) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]int{}
	}
	t.n++
	if r.err != nil {
		t.errs++
		t.m[what+" transport error"]++
		return
	}
	if r.status >= 500 {
		t.fivexx++
	}
	t.m[fmt.Sprintf("%s %d %s", what, r.status, r.code)]++
}

// String lists the answers, the most frequent first.
func (t *tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([]string, 0, len(t.m))
	for k := range t.m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if t.m[keys[i]] != t.m[keys[j]] {
			return t.m[keys[i]] > t.m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, t.m[k])
	}
	if t.n == 0 {
		return "none (the units were gone before their first request)"
	}
	return fmt.Sprintf("%d requests: %s", t.n, strings.Join(parts, ", "))
}

// sale is one run of one mode: a fresh SKU and its shoppers.
type sale struct {
	b  *bench
	id int64
	// sizes are the SKUs sold: a drop's, its first (id) first, or id.
	sizes []int64
	// sold counts the 202s of each of sizes.
	sold  []atomic.Int64
	mode  mode
	opens time.Time // when shoppers are let in: every shopper arrives after it
	// roomOpens is the room's opens_at, at or before opens: the challenges
	// of a room with a proof of work are fetched from it.
	roomOpens time.Time
	starts    time.Time
	units     int64
	shoppers  []shopper
	stop      chan struct{}
	stopOnce  sync.Once
	accepted  atomic.Int64
	soldOut   atomic.Int64 // ns after starts of the last unit's 202
	tallies   [2]tally     // bots, humans
	// seedSHA is the room's seed commitment as GET /api/v1/skus/{id}
	// answered it before the start.
	seedSHA string
	// expired counts the proofs of work refused as expired, solved again.
	expired atomic.Int64
}

func (s *sale) halt() { s.stopOnce.Do(func() { close(s.stop) }) }

// sleep waits d, or less if the sale is over for the shoppers: false then.
func (s *sale) sleep(d time.Duration) bool {
	if d <= 0 {
		select {
		case <-s.stop:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.stop:
		return false
	case <-t.C:
		return true
	}
}

func (s *sale) sleepUntil(at time.Time) bool { return s.sleep(time.Until(at)) }

// humanDelay is how much later than a bot a human acts on something.
func (s *sale) humanDelay() time.Duration {
	lo, hi := s.b.cfg.humanMin, s.b.cfg.humanMax
	if hi <= lo {
		return lo
	}
	return lo + rand.N(hi-lo)
}

// pollWait is how long sh waits before looking at its place again after r:
// a human honours retry_after_ms (or Retry-After), a bot looks speedup
// times as often, at least every botMin.
func (s *sale) pollWait(sh *shopper, r reply) time.Duration {
	d := time.Duration(r.retryMS) * time.Millisecond
	if d <= 0 {
		d = r.retryHdr
	}
	if d <= 0 {
		d = time.Second
	}
	if sh.bot {
		return max(d/time.Duration(s.b.cfg.speedup), s.b.cfg.botMin)
	}
	return d
}

// errWait is how long sh waits before trying again after an answer worth
// retrying: a human honours Retry-After (1 s without one), a bot retries
// every botMin.
func (s *sale) errWait(sh *shopper, r reply) time.Duration {
	if sh.bot {
		return s.b.cfg.botMin
	}
	if r.retryHdr > 0 {
		return r.retryHdr
	}
	return time.Second
}

// retryable: answers a shopper tries again after (busy, rate limited, not
// started or open yet, no answer at all).
func retryable(r reply) bool {
	if r.err != nil {
		return true
	}
	switch r.status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return true
	case http.StatusForbidden:
		return r.code == "sale_not_started" || r.code == "room_not_open"
	}
	return false
}

// call sends sh's request, with proof in the Seckill-PoW header if any,
// and tallies the answer under what.
func (s *sale) call(sh *shopper, method, path string, body []byte, proof, what string) reply {
	c := s.b.humans
	t := &s.tallies[1]
	if sh.bot {
		c, t = s.b.bots, &s.tallies[0]
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.b.url+path, rd)
	if err != nil {
		return reply{err: err}
	}
	req.Header.Set("X-User-ID", sh.user)
	if proof != "" {
		req.Header.Set("Seckill-PoW", proof)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		r := reply{err: err}
		t.add(what, r)
		return r
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		r := reply{err: err}
		t.add(what, r)
		return r
	}
	var v struct {
		Status       string `json:"status"`
		Error        string `json:"error"`
		Position     int64  `json:"position"`
		RetryAfterMS int64  `json:"retry_after_ms"`
		Ticket       string `json:"ticket"`
		Pass         string `json:"pass"`
		Challenge    string `json:"challenge"`
		Bits         int    `json:"bits"`
	}
	_ = json.Unmarshal(data, &v)
	r := reply{status: resp.StatusCode, code: v.Error, retryMS: v.RetryAfterMS, pos: v.Position, ticket: v.Ticket, pass: v.Pass,
		challenge: v.Challenge, bits: v.Bits}
	if r.code == "" {
		r.code = v.Status
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		if n, err := strconv.Atoi(ra); err == nil {
			r.retryHdr = time.Duration(n) * time.Second
		}
	}
	t.add(what, r)
	return r
}

// roomShopper arrives at arrive, joins the room (with its proof of work,
// when its device has found it), looks at its place as Retry-After says (a
// bot speedup times as often), and buys once admitted.
func (s *sale) roomShopper(sh *shopper, arrive time.Time) {
	if !s.sleepUntil(arrive.Add(sh.solving)) {
		return
	}
	path := s.path() + "/queue"
	proof := sh.proof
	var r reply
	for {
		r = s.call(sh, http.MethodPost, path, nil, proof, "join")
		if r.status == http.StatusOK {
			break
		}
		if r.code == "pow_expired" {
			// As web/pow/solve.js does: a new challenge, solved.
			s.expired.Add(1)
			p, wait, err := s.solveAgain(sh)
			if err != nil || !s.sleep(wait) {
				return
			}
			proof = p
			continue
		}
		if !retryable(r) || !s.sleep(s.errWait(sh, r)) {
			return
		}
	}
	sh.joined, sh.ticket, sh.late = true, r.ticket, r.pos > 0
	for {
		var d time.Duration
		switch {
		case r.status == http.StatusOK && r.code == "admitted":
			if !sh.bot && !s.sleep(s.humanDelay()) {
				return
			}
			if s.mode == modeDrop {
				s.buyDrop(sh, r.pass)
			} else {
				s.buy(sh, 0, r.pass)
			}
			return
		case r.status == http.StatusOK && (r.code == "sold_out" || r.code == "closed"):
			return
		case r.status == http.StatusOK:
			d = s.pollWait(sh, r)
		case retryable(r):
			d = s.errWait(sh, r)
		default:
			return
		}
		if !s.sleep(d) {
			return
		}
		r = s.call(sh, http.MethodGet, path, nil, "", "look")
	}
}

// plainShopper buys without a room: a bot from the start, a human a
// moment later (or after arriving, if later).
func (s *sale) plainShopper(sh *shopper, arrive time.Time) {
	at := s.starts
	if !sh.bot {
		at = maxTime(arrive, s.starts).Add(s.humanDelay())
	}
	if !s.sleepUntil(at) {
		return
	}
	s.buy(sh, 0, "")
}

// buy places sh's order of sizes[size] (with the pass, if any), trying
// again after the answers worth it, with the same request id, and returns
// the last answer.
func (s *sale) buy(sh *shopper, size int, pass string) reply {
	id := s.sizes[size]
	rid := sh.user
	if len(s.sizes) > 1 {
		rid = fmt.Sprintf("%s-%d", sh.user, id)
	}
	req := map[string]any{"sku_id": id, "qty": 1, "request_id": rid}
	if pass != "" {
		req["pass"] = pass
	}
	body, _ := json.Marshal(req)
	for {
		r := s.call(sh, http.MethodPost, "/api/v1/orders", body, "", "buy")
		switch {
		case r.err == nil && (r.status == http.StatusAccepted || r.status == http.StatusOK):
			sh.won = true
			s.sold[size].Add(1)
			if n := s.accepted.Add(1); n >= s.units {
				s.soldOut.Store(int64(time.Since(s.starts)))
				s.halt()
			}
			return r
		case retryable(r):
			if !s.sleep(s.errWait(sh, r)) {
				return r
			}
		default:
			return r
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// shop runs every shopper of the sale and returns when they are done, or
// when the sale sold out (no new request is started then; those in flight
// finish), or after timeout.
func (s *sale) shop(timeout time.Duration) (timedOut bool) {
	window := s.starts.Sub(s.opens)
	var wg sync.WaitGroup
	for i := range s.shoppers {
		sh := &s.shoppers[i]
		arrive := s.opens
		if !sh.bot && window > 0 {
			arrive = s.opens.Add(rand.N(window))
		}
		if s.mode.room() {
			wg.Go(func() { s.roomShopper(sh, arrive) })
		} else {
			wg.Go(func() { s.plainShopper(sh, arrive) })
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Until(s.starts) + timeout):
		timedOut = true
		s.halt()
		<-done
	}
	s.halt()
	return timedOut
}
