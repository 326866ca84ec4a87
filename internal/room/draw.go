package room

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/catalog"
)

// Rule is how the draw orders the pre-queue, as GET /api/v1/skus/{id}/draw
// states it for anyone to check.
const Rule = "pre-queue tickets sorted by the hex SHA-256 of seed + \":\" + ticket, ascending; " +
	"tickets that joined after starts_at follow in the order they joined"

// DrawKey is a pre-queue ticket's key in the draw: the hex SHA-256 of
// seed, ":" and the ticket.
func DrawKey(seed, ticket string) string {
	sum := sha256.Sum256([]byte(seed + ":" + ticket))
	return hex.EncodeToString(sum[:])
}

// Drawn returns tickets in the order the draw with seed puts them.
func Drawn(seed string, tickets []string) []string {
	type keyed struct{ key, ticket string }
	ks := make([]keyed, len(tickets))
	for i, t := range tickets {
		ks[i] = keyed{DrawKey(seed, t), t}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if a.key < b.key {
			return -1
		}
		if a.key > b.key {
			return 1
		}
		return 0
	})
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.ticket
	}
	return out
}

// drawTimeout bounds a draw of the pre-queue, and a tick that may draw.
const drawTimeout = 30 * time.Second

// drawChunk is how many tickets one Redis call reads or writes in a draw.
const drawChunk = 5000

// draw puts sku's pre-queue into its line in the drawn order, once the
// sale has started. It closes the pre-queue first (a join from then on
// queues behind it), and is the same whoever runs it, so an instance that
// dies mid-draw leaves it to the next; instances take turns on a lease,
// and each process draws a SKU once at a time.
//
// Every caller in this process waits on the one draw, which runs until it
// ends or drawTimeout, whoever gives up: a caller whose request ends must
// not end it for the others.
func (r *Room) draw(ctx context.Context, sku *catalog.SKU) error {
	done := r.drawing.DoChan(strconv.FormatUint(sku.ID, 10), func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drawTimeout)
		defer cancel()
		return nil, r.drawOnce(ctx, sku)
	})
	select {
	case res := <-done:
		return res.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Room) drawOnce(ctx context.Context, sku *catalog.SKU) error {
	k := r.keys(sku.ID)
	token := newTicket()
	deadline := time.Now().Add(10 * time.Second)
	for {
		drawn, err := r.rdb.HGet(ctx, k.meta, "drawn").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("room: draw sku %d: %w", sku.ID, err)
		}
		if drawn == "1" {
			return nil
		}
		ok, err := r.rdb.SetNX(ctx, k.drawLock, token, 30*time.Second).Result()
		if err != nil {
			return fmt.Errorf("room: draw sku %d: %w", sku.ID, err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("room: draw sku %d: %w", sku.ID, ErrBusy)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	defer r.rdb.Del(context.WithoutCancel(ctx), k.drawLock)
	if err := r.rdb.HSet(ctx, k.meta, "drawing", 1).Err(); err != nil {
		return fmt.Errorf("room: draw sku %d: %w", sku.ID, err)
	}
	tickets, err := r.preQueue(ctx, k)
	if err != nil {
		return fmt.Errorf("room: draw sku %d: %w", sku.ID, err)
	}
	order := Drawn(sku.Room.Seed, tickets)
	expire := time.UnixMilli(sku.EndsAt.Add(r.o.Keep).UnixMilli())
	_, err = r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for start := 0; start < len(order); start += drawChunk {
			end := min(start+drawChunk, len(order))
			zs := make([]redis.Z, 0, end-start)
			for i := start; i < end; i++ {
				zs = append(zs, redis.Z{Score: float64(i + 1), Member: order[i]})
			}
			p.ZAdd(ctx, k.line, zs...)
		}
		p.PExpireAt(ctx, k.line, expire)
		p.HSet(ctx, k.meta, "drawn", 1, "pre_queue", len(order))
		return nil
	})
	if err != nil {
		return fmt.Errorf("room: draw sku %d: %w", sku.ID, err)
	}
	return nil
}

// preQueue reads the pre-queue's tickets in the order they joined: an
// empty list, not nil, when nobody joined before the start, as the
// published draw shows it.
func (r *Room) preQueue(ctx context.Context, k keys) ([]string, error) {
	out := []string{}
	for start := int64(0); ; start += drawChunk {
		part, err := r.rdb.ZRange(ctx, k.pre, start, start+drawChunk-1).Result()
		if err != nil {
			return nil, err
		}
		out = append(out, part...)
		if len(part) < drawChunk {
			return out, nil
		}
	}
}
