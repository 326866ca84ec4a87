package main

// One sale: its SKU, its shoppers, its outcome.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// sale runs one sale of run in one mode.
func (b *bench) sale(run int, room bool) (outcome, error) {
	cfg := b.cfg
	opens := time.Now().UTC().Add(cfg.lead).Truncate(time.Millisecond)
	starts := opens.Add(cfg.window)
	mode := "none"
	if room {
		mode = "room"
	}
	s := &sale{b: b, room: room, opens: opens, starts: starts, units: cfg.units, stop: make(chan struct{})}
	id, err := b.createSKU(fmt.Sprintf("fairbench run %d %s", run, mode), opens, starts, room)
	if err != nil {
		return outcome{}, err
	}
	s.id = id
	b.skus = append(b.skus, id)
	// The room publishes its seed's SHA-256 from its opening, the seed
	// from the start: read the commitment in between.
	var commit chan error
	if room {
		commit = make(chan error, 1)
		go func() {
			time.Sleep(time.Until(opens.Add(cfg.window / 10)))
			var err error
			s.seedSHA, err = b.seedCommitment(id)
			commit <- err
		}()
	}
	if late := time.Since(opens); late > 0 {
		return outcome{}, fmt.Errorf("creating the SKU took past its opening by %s: raise -lead", late)
	}
	s.shoppers = make([]shopper, cfg.shoppers)
	for i := range s.shoppers {
		sh := &s.shoppers[i]
		sh.bot = i < cfg.bots
		kind := 'h'
		if sh.bot {
			kind = 'b'
		}
		sh.user = fmt.Sprintf("fb%s-r%d-%s-%c%05d", b.tag, run, mode, kind, i)
	}
	o := outcome{run: run, room: room}
	o.timedOut = s.shop(cfg.timeout)
	if commit != nil {
		if err := <-commit; err != nil {
			return o, err
		}
	}
	if d := s.soldOut.Load(); d > 0 {
		o.soldOut = time.Duration(d)
	}
	for _, sh := range s.shoppers {
		c := 1
		if sh.bot {
			c = 0
		}
		if sh.won {
			if sh.bot {
				o.botUnits++
			} else {
				o.humUnits++
			}
		}
		if room && !sh.joined {
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
	if err := b.drained(id, o.total(), 2*time.Minute); err != nil {
		return o, err
	}
	if err := b.sqlCount(id, &o); err != nil {
		return o, err
	}
	if room {
		o.drawOK, o.drawNote = b.checkDraw(s)
	}
	o.answers = [2]string{s.tallies[0].String(), s.tallies[1].String()}
	return o, nil
}

// createSKU creates the sale's SKU and returns its id.
func (b *bench) createSKU(name string, opens, starts time.Time, room bool) (int64, error) {
	ends := starts.Add(time.Hour)
	body := map[string]any{
		"name": name, "price_cents": 9900, "stock": b.cfg.units, "per_user_limit": 1,
		"starts_at": starts.Format(time.RFC3339Nano), "ends_at": ends.Format(time.RFC3339Nano),
	}
	if room {
		body["waiting_room"] = map[string]any{
			"opens_at": opens.Format(time.RFC3339Nano), "mode": "random",
			"admit_per_second": b.cfg.admit, "pass_ttl": b.cfg.passTTL.String(), "overbook": b.cfg.overbook,
		}
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

// seedCommitment is the room's seed_sha256 as the SKU's public view gives
// it between the room's opening and the start (when it must not give the
// seed).
func (b *bench) seedCommitment(id int64) (string, error) {
	var v struct {
		WaitingRoom *struct {
			SeedSHA256 string `json:"seed_sha256"`
			Seed       string `json:"seed"`
		} `json:"waiting_room"`
	}
	status, data, err := b.adminDo(http.MethodGet, fmt.Sprintf("/api/v1/skus/%d", id), nil, &v)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK || v.WaitingRoom == nil || v.WaitingRoom.SeedSHA256 == "" {
		return "", fmt.Errorf("GET /api/v1/skus/%d: %d %s: no waiting_room.seed_sha256", id, status, data)
	}
	if v.WaitingRoom.Seed != "" {
		return "", fmt.Errorf("GET /api/v1/skus/%d before the start gives the seed: %s", id, data)
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
