package main

// A drop: several SKUs, the sizes of one product, sold through one room.

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// path is the public path of what the sale's shoppers queue for: the
// drop's, or the SKU's.
func (s *sale) path() string {
	if s.mode == modeDrop {
		return fmt.Sprintf("/api/v1/drops/%d", s.id)
	}
	return fmt.Sprintf("/api/v1/skus/%d", s.id)
}

// createDrop creates cfg.sizes SKUs sharing the sale's units on its window,
// without rooms, then the drop of them with the room's settings and a
// per_user_limit of 1 over them all, before the start as a drop must be.
func (s *sale) createDrop(name string) error {
	b := s.b
	n := int64(b.cfg.sizes)
	ends := s.starts.Add(time.Hour)
	s.sizes = make([]int64, n)
	for i := range n {
		units := b.cfg.units / n
		if i < b.cfg.units%n {
			units++
		}
		body := map[string]any{
			"name": fmt.Sprintf("%s, size %d", name, 40+i), "price_cents": 9900, "stock": units, "per_user_limit": 1,
			"starts_at": s.starts.Format(time.RFC3339Nano), "ends_at": ends.Format(time.RFC3339Nano),
		}
		var v struct {
			ID int64 `json:"id"`
		}
		status, data, err := b.adminDo(http.MethodPost, "/admin/skus", body, &v)
		if err != nil {
			return err
		}
		if status != http.StatusCreated || v.ID == 0 {
			return fmt.Errorf("POST /admin/skus: %d %s", status, data)
		}
		s.sizes[i] = v.ID
	}
	body := map[string]any{
		"name": name, "skus": s.sizes, "per_user_limit": 1,
		"waiting_room": map[string]any{
			"opens_at": s.roomOpens.Format(time.RFC3339Nano), "mode": "random",
			"admit_per_second": b.cfg.admit, "pass_ttl": b.cfg.passTTL.String(), "overbook": b.cfg.overbook,
		},
	}
	var v struct {
		ID int64 `json:"id"`
	}
	status, data, err := b.adminDo(http.MethodPost, "/admin/drops", body, &v)
	if err != nil {
		return err
	}
	if status != http.StatusCreated || v.ID == 0 {
		return fmt.Errorf("POST /admin/drops: %d %s", status, data)
	}
	if v.ID != s.sizes[0] {
		return fmt.Errorf("POST /admin/drops: drop %d, not its first SKU's id %d", v.ID, s.sizes[0])
	}
	s.id = v.ID
	return nil
}

// buyDrop buys one of the drop's sizes with sh's pass: a size chosen at
// random, then, while they answer sold_out, the others in random order (a
// human a moment before each, a bot at once). A sold-out size leaves the
// pass unspent.
func (s *sale) buyDrop(sh *shopper, pass string) {
	for k, i := range rand.Perm(len(s.sizes)) {
		if k > 0 && !sh.bot && !s.sleep(s.humanDelay()) {
			return
		}
		if r := s.buy(sh, i, pass); r.err != nil || r.code != "sold_out" {
			return
		}
	}
}
