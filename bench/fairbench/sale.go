package main

// One sale: its SKU, its shoppers, its outcome.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// sale runs one sale of run in mode m.
func (b *bench) sale(run int, m mode) (outcome, error) {
	cfg := b.cfg
	shoppers := make([]shopper, cfg.shoppers)
	for i := range shoppers {
		sh := &shoppers[i]
		sh.bot = i < cfg.bots
		kind := 'h'
		if sh.bot {
			kind = 'b'
			sh.op = i / cfg.botIDs
		}
		sh.user = fmt.Sprintf("fb%s-r%d-%s-%c%05d", b.tag, run, m.key(), kind, i)
	}
	var s *sale
	var pow *powStats
	for tries := 1; ; tries++ {
		lead := cfg.lead
		if m == modePow {
			lead = b.powLead()
		}
		opens := time.Now().UTC().Add(lead).Truncate(time.Millisecond)
		starts := opens.Add(b.window(m))
		// The room opens as the SKU is made, even when the shoppers are let
		// in later (pow: once their proofs are solved), as it gives
		// challenges only once open; nobody joins before opens.
		roomOpens := time.Now().UTC().Add(cfg.lead).Truncate(time.Millisecond)
		if roomOpens.After(opens) {
			roomOpens = opens
		}
		s = &sale{b: b, mode: m, opens: opens, roomOpens: roomOpens, starts: starts, units: cfg.units, shoppers: shoppers, stop: make(chan struct{})}
		name := fmt.Sprintf("fairbench run %d %s", run, m.key())
		if m == modeDrop {
			if err := s.createDrop(name); err != nil {
				return outcome{}, err
			}
		} else {
			id, err := b.createSKU(name, roomOpens, starts, m)
			if err != nil {
				return outcome{}, err
			}
			s.id, s.sizes = id, []int64{id}
		}
		s.sold = make([]atomic.Int64, len(s.sizes))
		if m != modePow {
			if late := time.Since(opens); late > 0 {
				return outcome{}, fmt.Errorf("creating the sale took past its opening by %s: raise -lead", late)
			}
			break
		}
		// The shoppers are handed their proofs a moment before the opening.
		st, err := s.prepare(opens.Add(-time.Second))
		if err != nil {
			return outcome{}, err
		}
		b.hashRate = st.rate
		st.tries = tries
		pow = &st
		if st.done {
			break
		}
		if tries == 3 || b.powSolving() > b.maxPowLead() {
			return outcome{run: run, mode: m, skipped: fmt.Sprintf("%d tries: the solving here (%.1f M hashes/s) takes longer than the %.0f s the challenges leave",
				tries, st.rate/1e6, b.maxPowLead().Seconds())}, nil
		}
		// The solving was slower than measured before: a new SKU, with
		// the rate just measured. This one opens to nobody.
		for i := range shoppers {
			shoppers[i].proof = ""
		}
	}
	opens := s.opens
	b.skus = append(b.skus, s.sizes...)
	// The room publishes its seed's SHA-256 from its opening, the seed
	// from the start: read the commitment in between.
	var commit chan error
	if m.room() {
		commit = make(chan error, 1)
		go func() {
			time.Sleep(time.Until(opens.Add(b.window(m) / 10)))
			var err error
			s.seedSHA, err = b.seedCommitment(s.path())
			commit <- err
		}()
	}
	o := outcome{run: run, mode: m, pow: pow}
	o.timedOut = s.shop(cfg.timeout)
	if commit != nil {
		if err := <-commit; err != nil {
			return o, err
		}
	}
	if d := s.soldOut.Load(); d > 0 {
		o.soldOut = time.Duration(d)
	}
	opUnits := map[int]int64{}
	for _, sh := range s.shoppers {
		c := 1
		if sh.bot {
			c = 0
		}
		if sh.won {
			if sh.bot {
				o.botUnits++
				opUnits[sh.op]++
				o.opMax = max(o.opMax, opUnits[sh.op])
			} else {
				o.humUnits++
			}
		}
		if m.room() && !sh.joined {
			o.notIn[c]++
		}
		if sh.late {
			o.late[c]++
		}
	}
	for i := range s.tallies {
		o.fivexx += s.tallies[i].fivexx
		o.errs += s.tallies[i].errs
	}
	for i, id := range s.sizes {
		o.sizes = append(o.sizes, s.sold[i].Load())
		if err := b.drained(id, o.sizes[i], 2*time.Minute); err != nil {
			return o, err
		}
	}
	if err := b.sqlCount(s.sizes, &o); err != nil {
		return o, err
	}
	if m.room() {
		o.drawOK, o.drawNote = b.checkDraw(s)
	}
	if pow != nil {
		pow.expired = s.expired.Load()
	}
	o.answers = [2]string{s.tallies[0].String(), s.tallies[1].String()}
	return o, nil
}

// window is the pre-queue window of a sale in mode m.
func (b *bench) window(m mode) time.Duration {
	if m == modePow {
		return b.cfg.powWindow
	}
	return b.cfg.window
}

// createSKU creates the sale's SKU and returns its id.
func (b *bench) createSKU(name string, opens, starts time.Time, m mode) (int64, error) {
	ends := starts.Add(time.Hour)
	body := map[string]any{
		"name": name, "price_cents": 9900, "stock": b.cfg.units, "per_user_limit": 1,
		"starts_at": starts.Format(time.RFC3339Nano), "ends_at": ends.Format(time.RFC3339Nano),
	}
	if m.room() {
		wr := map[string]any{
			"opens_at": opens.Format(time.RFC3339Nano), "mode": "random",
			"admit_per_second": b.cfg.admit, "pass_ttl": b.cfg.passTTL.String(), "overbook": b.cfg.overbook,
		}
		if m == modePow {
			wr["pow_bits"] = b.cfg.powBits
		}
		body["waiting_room"] = wr
	}
	var v struct {
		ID int64 `json:"id"`
	}
	status, data, err := b.adminDo(http.MethodPost, "/admin/skus", body, &v)
	if err != nil {
		return 0, err
	}
	if status != http.StatusCreated || v.ID == 0 {
		return 0, fmt.Errorf("POST /admin/skus: %d %s", status, data)
	}
	return v.ID, nil
}

// seedCommitment is the room's seed_sha256 as the public view at path (a
// SKU's or a drop's) gives it between the room's opening and the start
// (when it must not give the seed).
func (b *bench) seedCommitment(path string) (string, error) {
	var v struct {
		WaitingRoom *struct {
			SeedSHA256 string `json:"seed_sha256"`
			Seed       string `json:"seed"`
		} `json:"waiting_room"`
	}
	status, data, err := b.adminDo(http.MethodGet, path, nil, &v)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK || v.WaitingRoom == nil || v.WaitingRoom.SeedSHA256 == "" {
		return "", fmt.Errorf("GET %s: %d %s: no waiting_room.seed_sha256", path, status, data)
	}
	if v.WaitingRoom.Seed != "" {
		return "", fmt.Errorf("GET %s before the start gives the seed: %s", path, data)
	}
	return v.WaitingRoom.SeedSHA256, nil
}

// adminDo sends a request with the admin token and decodes a JSON answer
// into v (if not nil).
func (b *bench) adminDo(method, path string, body, v any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, b.url+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.admin.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	if v != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, v); err != nil {
			return resp.StatusCode, data, fmt.Errorf("%s %s: %w: %s", method, path, err, data)
		}
	}
	return resp.StatusCode, data, nil
}
