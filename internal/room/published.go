package room

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/seckill/seckill/internal/catalog"
)

// Draw is a room's published draw, the document Published returns:
// everything needed to recompute the order of its line.
type Draw struct {
	SKU        uint64 `json:"sku_id"`
	Mode       string `json:"mode"`
	Seed       string `json:"seed,omitempty"`
	SeedSHA256 string `json:"seed_sha256,omitempty"`
	Rule       string `json:"rule"`
	// PreQueue: the tickets that joined before starts_at, in the order
	// they joined (random mode); never null.
	PreQueue []string `json:"pre_queue"`
	// Later: the tickets that joined after (every ticket, fifo), in the
	// order they joined; never null.
	Later []string `json:"later"`
	// Controls: the changes operators made to the room's controls
	// (Control), oldest first, so that a reader sees when admission was
	// paused or its rate changed; never null.
	Controls []Change `json:"controls"`
	// Codes: the tickets of priority codes, in the order the codes were
	// used, each admitted before the line's tickets from its After on;
	// never null. CodesMade counts the codes the room held.
	Codes     []PriorityTicket `json:"codes"`
	CodesMade int64            `json:"codes_made"`
}

// fifoRule is the rule of a fifo room's line.
const fifoRule = "every ticket in the order it joined"

// A process keeps the documents of the draws asked for last: at most
// keptDraws of them, and at most keptDrawBytes together, but the last one
// whatever its size (about 30 bytes a ticket).
const (
	keptDraws     = 4
	keptDrawBytes = 64 << 20
)

// Published returns the JSON document of the draw of the SKU with id (a
// Draw) once its sale has ended: ErrNotPublished before, ErrNoRoom for a
// SKU without a room. A published draw changes no more, so the process
// builds its document once, streaming the tickets from Redis in chunks,
// and every caller gets the same bytes, which it must not modify. It is
// built again when the room's state in Redis is no longer the one it was
// built from (lost and made again, or joined late through an instance
// that did not know the sale had ended).
func (r *Room) Published(ctx context.Context, id uint64) ([]byte, error) {
	sku, err := r.roomSKU(ctx, id)
	if err != nil {
		return nil, err
	}
	if !sku.Room.On() {
		return nil, ErrNoRoom
	}
	if r.o.Now().Before(sku.EndsAt) {
		return nil, fmt.Errorf("%w: at %s", ErrNotPublished, sku.EndsAt.UTC().Format(time.RFC3339))
	}
	k := r.keys(sku.ID)
	pipe := r.rdb.Pipeline()
	meta, changes := pipe.HMGet(ctx, k.meta, "epoch", "joined"), pipe.LLen(ctx, k.changes)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("room: draw of sku %d: %w", sku.ID, err)
	}
	m := meta.Val()
	v := drawVersion{sku: sku.ID, mode: sku.Room.Mode, seed: sku.Room.Seed, changes: changes.Val()}
	v.epoch, _ = m[0].(string)
	v.joined, _ = m[1].(string)
	if doc, ok := r.draws.get(v); ok {
		return doc, nil
	}
	// Every caller waits on the one build, which a caller giving up does
	// not end for the others. A caller that missed the cache just before a
	// build put its document there finds it then, rather than build again.
	done := r.publishing.DoChan(fmt.Sprint(v), func() (any, error) {
		if doc, ok := r.draws.get(v); ok {
			return doc, nil
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drawTimeout)
		defer cancel()
		doc, err := r.encodeDraw(ctx, sku, k)
		if err != nil {
			return nil, fmt.Errorf("room: draw of sku %d: %w", sku.ID, err)
		}
		r.draws.put(v, doc)
		return doc, nil
	})
	select {
	case res := <-done:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.([]byte), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// encodeDraw writes the draw of sku as JSON, reading its tickets from
// Redis drawChunk at a time into a buffer sized for them.
func (r *Room) encodeDraw(ctx context.Context, sku *catalog.SKU, k keys) ([]byte, error) {
	fifo := sku.Room.Mode == catalog.RoomFIFO
	pipe := r.rdb.Pipeline()
	pre, line, made := pipe.ZCard(ctx, k.pre), pipe.ZCard(ctx, k.line), pipe.HLen(ctx, k.codes)
	// The drawn pre-queue is at places 1..n of the line, later joiners
	// from 1e12 on (fifo: every ticket is a later one).
	drawn := pipe.ZCount(ctx, k.line, "-inf", "(1e12")
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	preN, laterFrom := pre.Val(), drawn.Val()
	if fifo {
		preN, laterFrom = 0, 0
	}
	laterN := line.Val() - laterFrom

	b := make([]byte, 0, 512+(preN+laterN)*(ticketLen+3))
	b = append(b, `{"sku_id":`...)
	b = strconv.AppendUint(b, sku.ID, 10)
	b = appendField(b, "mode", sku.Room.Mode)
	if fifo {
		b = appendField(b, "rule", fifoRule)
	} else {
		b = appendField(b, "seed", sku.Room.Seed)
		b = appendField(b, "seed_sha256", sku.Room.SeedSHA256())
		b = appendField(b, "rule", Rule)
	}
	b = append(b, `,"pre_queue":[`...)
	b, err := r.appendTickets(ctx, b, k.pre, 0, preN)
	if err != nil {
		return nil, err
	}
	b = append(b, `],"later":[`...)
	if b, err = r.appendTickets(ctx, b, k.line, laterFrom, laterN); err != nil {
		return nil, err
	}
	ctl, err := r.readControls(ctx, k)
	if err != nil {
		return nil, err
	}
	list, err := json.Marshal(ctl.Changes) // never null: made with a capacity
	if err != nil {
		return nil, err
	}
	b = append(b, `],"controls":`...)
	b = append(b, list...)
	codes, err := r.priorityTickets(ctx, k)
	if err != nil {
		return nil, err
	}
	if list, err = json.Marshal(codes); err != nil {
		return nil, err
	}
	b = append(b, `,"codes":`...)
	b = append(b, list...)
	b = append(b, `,"codes_made":`...)
	b = strconv.AppendInt(b, made.Val(), 10)
	return append(b, '}'), nil
}

// appendField appends ,"name":value to the JSON object in b.
func appendField(b []byte, name, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	v, _ := json.Marshal(value) // a string always encodes
	return append(b, v...)
}

// appendTickets appends the n members of the sorted set key from rank
// from on, as JSON strings separated by commas.
func (r *Room) appendTickets(ctx context.Context, b []byte, key string, from, n int64) ([]byte, error) {
	for start := from; start < from+n; start += drawChunk {
		part, err := r.rdb.ZRange(ctx, key, start, min(start+drawChunk, from+n)-1).Result()
		if err != nil {
			return nil, err
		}
		if len(part) == 0 {
			break
		}
		list, _ := json.Marshal(part) // strings always encode
		if start > from {
			b = append(b, ',')
		}
		b = append(b, list[1:len(list)-1]...)
	}
	return b, nil
}

// drawVersion names the state of a room a draw's document was built from.
type drawVersion struct {
	sku           uint64
	mode, seed    string
	epoch, joined string // the room's epoch and tickets issued, as Redis holds them
	changes       int64  // the changes to its controls
}

// draws are the documents of the draws asked for last, the most recent
// first.
type draws struct {
	mu   sync.Mutex
	docs []drawDoc
}

type drawDoc struct {
	v   drawVersion
	doc []byte
}

// get returns the document built from v, if kept.
func (d *draws) get(v drawVersion) ([]byte, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, e := range d.docs {
		if e.v == v {
			copy(d.docs[1:i+1], d.docs[:i])
			d.docs[0] = e
			return e.doc, true
		}
	}
	return nil, false
}

// put keeps doc, built from v, first, in place of any other of its SKU,
// and forgets the least recent beyond keptDraws or keptDrawBytes.
func (d *draws) put(v drawVersion, doc []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	docs := []drawDoc{{v, doc}}
	size := len(doc)
	for _, e := range d.docs {
		if e.v.sku == v.sku {
			continue
		}
		if len(docs) == keptDraws || size+len(e.doc) > keptDrawBytes {
			break
		}
		docs = append(docs, e)
		size += len(e.doc)
	}
	d.docs = docs
}
