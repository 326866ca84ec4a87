package room

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/catalog"
)

// Report is the check of a SKU's waiting room: its counts, and the
// shoppers who bought without being admitted (each needs a pass, which
// only admission gives). Kept is false once the room's state has expired
// (ends_at + Options.Keep) or was never made: nothing to check.
type Report struct {
	Kept          bool  `json:"kept"`
	Joined        int64 `json:"joined"`
	Admitted      int64 `json:"admitted"`
	Waiting       int64 `json:"waiting"`
	ValidPasses   int64 `json:"valid_passes"`
	ExpiredPasses int64 `json:"expired_passes"`
	// NotAdmitted counts the buyers (given to Audit) without an admitted
	// ticket; Sample names a few.
	NotAdmitted int64    `json:"not_admitted_buyers"`
	Sample      []string `json:"not_admitted_sample,omitempty"`
}

// Audit checks the room of sku against buyers, the shoppers with an order
// of it (in SQL or queued).
func (r *Room) Audit(ctx context.Context, sku *catalog.SKU, buyers []string) (*Report, error) {
	if !sku.Room.On() {
		return nil, ErrNoRoom
	}
	k := r.keys(sku.ID)
	m, err := r.rdb.HMGet(ctx, k.meta, "cursor", "joined", "admitted", "expired", "drawn").Result()
	if err != nil {
		return nil, fmt.Errorf("room: audit sku %d: %w", sku.ID, err)
	}
	rep := &Report{}
	if m[1] == nil {
		return rep, nil
	}
	rep.Kept = true
	cursor := toInt(orZero(m[0]))
	rep.Joined, rep.Admitted, rep.ExpiredPasses = toInt(m[1]), toInt(orZero(m[2])), toInt(orZero(m[3]))
	pipe := r.rdb.Pipeline()
	line, pre, passes := pipe.ZCard(ctx, k.line), pipe.ZCard(ctx, k.pre), pipe.HLen(ctx, k.valid)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("room: audit sku %d: %w", sku.ID, err)
	}
	rep.ValidPasses = passes.Val()
	rep.Waiting = line.Val() - cursor
	if sku.Room.Mode != catalog.RoomFIFO && m[4] == nil {
		rep.Waiting += pre.Val() // not drawn yet
	}
	slices.Sort(buyers)
	for chunk := range slices.Chunk(slices.Compact(buyers), 1000) {
		tickets, err := r.rdb.HMGet(ctx, k.who, chunk...).Result()
		if err != nil {
			return nil, fmt.Errorf("room: audit sku %d: %w", sku.ID, err)
		}
		pipe := r.rdb.Pipeline()
		ranks := make([]*redis.IntCmd, len(chunk))
		for i, t := range tickets {
			if s, ok := t.(string); ok {
				ranks[i] = pipe.ZRank(ctx, k.line, s)
			}
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("room: audit sku %d: %w", sku.ID, err)
		}
		for i, user := range chunk {
			if ranks[i] != nil && ranks[i].Err() == nil && ranks[i].Val() < cursor {
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

func orZero(v any) any {
	if v == nil {
		return "0"
	}
	return v
}
