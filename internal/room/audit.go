package room

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/catalog"
)

// Report is the check of a SKU's waiting room: its counts, and the
// shoppers who bought without being admitted (each needs a pass, which
// only admission gives). Kept is false once the room's state has expired
// (ends_at + Options.Keep), was never made or was lost: nothing to check.
//
// Redis may lose the room's state during the sale (a restart without
// persistence, a failover that missed writes) and the room then starts
// again with the shoppers who join after: an admission made before the
// loss left no trace to check. StateLost says so, and Unchecked counts the
// buyers concerned, which are not violations.
type Report struct {
	Kept          bool  `json:"kept"`
	Joined        int64 `json:"joined"`
	Admitted      int64 `json:"admitted"`
	Waiting       int64 `json:"waiting"`
	ValidPasses   int64 `json:"valid_passes"`
	ExpiredPasses int64 `json:"expired_passes"`
	// Since is when the room's state in Redis was made: its first
	// ticket. Nil when Redis holds none (or a state made before it was
	// recorded).
	Since *time.Time `json:"state_since,omitempty"`
	// StateLost: Redis lost the room's state after it admitted buyers.
	// It holds none before the state's expiry while the SKU has buyers,
	// or one made after some of them placed their last order.
	StateLost bool `json:"state_lost"`
	// Unchecked counts the buyers whose admission cannot be checked: all
	// of them when Redis lost the state, those whose last order precedes
	// Since when it was made again.
	Unchecked int64 `json:"unchecked_buyers"`
	// NotAdmitted counts the buyers (given to Audit) that the state kept
	// shows were not admitted: without an admitted ticket, and with an
	// order placed since the state was made. Sample names a few.
	NotAdmitted int64    `json:"not_admitted_buyers"`
	Sample      []string `json:"not_admitted_sample,omitempty"`
	// OpenBuyers counts the buyers whose last order was placed while the
	// room was open (Open: a buy needed no pass), or within a second of
	// its end: not checked, and not violations.
	OpenBuyers int64 `json:"open_buyers"`
}

// Buyer is a shopper with an order of a SKU, in SQL or queued, and when
// they placed the last one.
type Buyer struct {
	User string
	Last time.Time
}

// Audit checks the room of sku against buyers, the shoppers with an order
// of it.
func (r *Room) Audit(ctx context.Context, sku *catalog.SKU, buyers []Buyer) (*Report, error) {
	if !sku.Room.On() {
		return nil, ErrNoRoom
	}
	buyers = lastOrders(buyers)
	k := r.keys(sku.ID)
	ctl, err := r.readControls(ctx, k)
	if err != nil {
		return nil, fmt.Errorf("room: audit sku %d: %w", sku.ID, err)
	}
	rep := &Report{}
	buyers = slices.DeleteFunc(buyers, func(b Buyer) bool {
		if ctl.openAt(b.Last) {
			rep.OpenBuyers++
			return true
		}
		return false
	})
	m, err := r.rdb.HMGet(ctx, k.meta, "cursor", "joined", "admitted", "expired", "drawn", "since", "pseq", "pcursor").Result()
	if err != nil {
		return nil, fmt.Errorf("room: audit sku %d: %w", sku.ID, err)
	}
	if m[1] == nil {
		// Nobody joined, or the state expired; or, with buyers before its
		// expiry, Redis lost it.
		if len(buyers) > 0 && r.o.Now().Before(sku.EndsAt.Add(r.o.Keep)) {
			rep.StateLost, rep.Unchecked = true, int64(len(buyers))
		}
		return rep, nil
	}
	rep.Kept = true
	cursor := toInt(orZero(m[0]))
	rep.Joined, rep.Admitted, rep.ExpiredPasses = toInt(m[1]), toInt(orZero(m[2])), toInt(orZero(m[3]))
	if ms := toInt(orZero(m[5])); ms > 0 {
		since := time.UnixMilli(ms).UTC()
		rep.Since = &since
	}
	pipe := r.rdb.Pipeline()
	line, pre, passes := pipe.ZCard(ctx, k.line), pipe.ZCard(ctx, k.pre), pipe.HLen(ctx, k.valid)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("room: audit sku %d: %w", sku.ID, err)
	}
	rep.ValidPasses = passes.Val()
	pcursor := toInt(orZero(m[7]))
	rep.Waiting = line.Val() - cursor + toInt(orZero(m[6])) - pcursor
	if sku.Room.Mode != catalog.RoomFIFO && m[4] == nil {
		rep.Waiting += pre.Val() // not drawn yet
	}
	// A buyer whose last order precedes the state was admitted, if at
	// all, by a state Redis lost.
	checked := buyers[:0]
	for _, b := range buyers {
		if rep.Since != nil && b.Last.Before(*rep.Since) {
			rep.Unchecked++
			continue
		}
		checked = append(checked, b)
	}
	rep.StateLost = rep.Unchecked > 0
	for chunk := range slices.Chunk(checked, 1000) {
		users := make([]string, len(chunk))
		for i, b := range chunk {
			users[i] = b.User
		}
		tickets, err := r.rdb.HMGet(ctx, k.who, users...).Result()
		if err != nil {
			return nil, fmt.Errorf("room: audit sku %d: %w", sku.ID, err)
		}
		pipe := r.rdb.Pipeline()
		ranks, prio := make([]*redis.IntCmd, len(chunk)), make([]*redis.IntCmd, len(chunk))
		for i, t := range tickets {
			if s, ok := t.(string); ok {
				ranks[i], prio[i] = pipe.ZRank(ctx, k.line, s), pipe.ZRank(ctx, k.prio, s)
			}
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("room: audit sku %d: %w", sku.ID, err)
		}
		for i, user := range users {
			if ranks[i] != nil && (ranks[i].Err() == nil && ranks[i].Val() < cursor ||
				prio[i].Err() == nil && prio[i].Val() < pcursor) {
				continue
			}
			rep.NotAdmitted++
			if len(rep.Sample) < 5 {
				rep.Sample = append(rep.Sample, user)
			}
		}
	}
	return rep, nil
}

// lastOrders returns buyers with one entry per shopper, the last order
// of their entries, sorted by shopper.
func lastOrders(buyers []Buyer) []Buyer {
	out := slices.Clone(buyers)
	slices.SortFunc(out, func(a, b Buyer) int {
		if c := strings.Compare(a.User, b.User); c != 0 {
			return c
		}
		return b.Last.Compare(a.Last) // the last first
	})
	return slices.CompactFunc(out, func(a, b Buyer) bool { return a.User == b.User })
}

func orZero(v any) any {
	if v == nil {
		return "0"
	}
	return v
}
