package stock

import (
	"strconv"

	"github.com/seckill/seckill/internal/orderid"
)

// Tag is the hash tag of a SKU, "{sku:42}". Every key of the SKU — stock,
// buyers, request ids, its lock (package lock) and its order queue
// (internal/queue) — carries it, so one script can touch them all, on
// standalone Redis and in one Redis Cluster slot alike.
func Tag(sku uint64) string { return Part{SKU: sku}.Tag() }

// MaxBuckets is the most buckets a SKU's stock can be split into.
const MaxBuckets = 64

// Part is one bucket of a SKU's stock: a share of its units with its own
// buyers, request ids, rate budgets, lock and order queue under its own
// hash tag, so the buckets of one SKU land on different Cluster slots.
// Bucket 0 carries the SKU's tag, "{sku:42}": a SKU of one bucket is laid
// out as one that is not split. Bucket b > 0 carries "{sku:42:b}".
//
// A SKU of a drop (Drop, the id of the drop's first SKU) has one bucket,
// whose keys carry the drop's tag: "{sku:40}:sku:42", so that one script
// spends a pass of the drop's room (kept under "{sku:40}") with any of its
// SKUs' units, in one Redis Cluster slot.
type Part struct {
	SKU    uint64
	Bucket int
	Drop   uint64
}

// Tag is the part's hash tag, and the start of the name of each of its
// keys.
func (p Part) Tag() string {
	switch {
	case p.Drop > 0 && p.Drop != p.SKU:
		return "{sku:" + strconv.FormatUint(p.Drop, 10) + "}:sku:" + strconv.FormatUint(p.SKU, 10)
	case p.Bucket == 0:
		return "{sku:" + strconv.FormatUint(p.SKU, 10) + "}"
	}
	return "{sku:" + strconv.FormatUint(p.SKU, 10) + ":" + strconv.Itoa(p.Bucket) + "}"
}

// Room is the SKU whose waiting room gates the part's buys, and whose tag
// the room's keys carry: the drop's first SKU, or the part's own.
func (p Part) Room() uint64 {
	if p.Drop > 0 {
		return p.Drop
	}
	return p.SKU
}

// Layout is how a SKU's stock is laid out in Redis: in Buckets parts, or,
// for a SKU of a drop, in one part under the tag of the drop (Part).
type Layout struct {
	SKU     uint64
	Buckets int
	Drop    uint64
}

// Parts lists the layout's parts, bucket 0 first.
func (l Layout) Parts() []Part {
	if l.Drop > 0 {
		return []Part{l.only()}
	}
	return Parts(l.SKU, l.Buckets)
}

// Home is the part user buys from (see Home).
func (l Layout) Home(user string) Part {
	if l.Drop > 0 {
		return l.only()
	}
	return Home(l.SKU, l.Buckets, user)
}

// Of returns the part an order of the SKU was taken from (see PartOf).
func (l Layout) Of(orderID string) Part {
	if l.Drop > 0 {
		return l.only()
	}
	return PartOf(l.SKU, orderID)
}

// only is the one part of a SKU of a drop. The drop's first SKU keeps its
// own tag, the drop's: its part names no drop, so that it equals the part
// any other code of the SKU makes.
func (l Layout) only() Part {
	if l.Drop == l.SKU {
		return Part{SKU: l.SKU}
	}
	return Part{SKU: l.SKU, Drop: l.Drop}
}

// Home is the bucket of sku's stock (of buckets) user buys from: always
// the same one, so the shopper's limit, request ids and rate budget are
// kept in one place.
func Home(sku uint64, buckets int, user string) Part {
	if buckets <= 1 {
		return Part{SKU: sku}
	}
	// FNV-1a over the id's bytes, inline: no allocation per request.
	h := uint32(2166136261)
	for i := 0; i < len(user); i++ {
		h ^= uint32(user[i])
		h *= 16777619
	}
	return Part{SKU: sku, Bucket: int(h % uint32(min(buckets, MaxBuckets)))} //nolint:gosec // at most MaxBuckets
}

// Parts lists the buckets of sku, bucket 0 first.
func Parts(sku uint64, buckets int) []Part {
	ps := make([]Part, max(min(buckets, MaxBuckets), 1))
	for i := range ps {
		ps[i] = Part{SKU: sku, Bucket: i}
	}
	return ps
}

// keys holds the Redis names of one part's stock state.
type keys struct {
	stock    string // HASH total, left, limit, fence, ends, moved, epoch
	buyers   string // HASH user id -> units bought
	staging  string // HASH buyers being rebuilt
	returned string // SET ids of orders whose units came back
	retstage string // SET returned ids being rebuilt
	paused   string // STRING token of a rebuild in progress (with a TTL)
	rid      string // prefix of request-id keys (see requestID)
	ratePfx  string // prefix of per-shopper rate keys (see rate)
	lent     string // HASH transfer id -> units lent to another bucket, not yet settled
	received string // SET ids of transfers received from another bucket
}

func newKeys(prefix string, p Part) keys {
	base := prefix + p.Tag() + ":"
	return keys{
		stock:    base + "stock",
		buyers:   base + "buyers",
		staging:  base + "buyers:staging",
		returned: base + "returned",
		retstage: base + "returned:staging",
		paused:   base + "paused",
		rid:      base + "rid:",
		ratePfx:  base + "rate:",
		lent:     base + "lent",
		received: base + "received",
	}
}

// RoomPrefix is the prefix of the names of sku's waiting room state, under
// the SKU's tag (a SKU with a waiting room has one bucket; the room of a
// drop is its first SKU's): the buy script spends a pass in RoomPrefix +
// "valid" with the stock of any SKU the room gates (Part.Room).
func RoomPrefix(prefix string, sku uint64) string { return prefix + Tag(sku) + ":room:" }

// HashKey is the name of part p's stock hash, whose "left" a waiting room
// reads.
func HashKey(prefix string, p Part) string { return newKeys(prefix, p).stock }

// stockBackChannel carries the id of a SKU whose units came back, so every
// instance clears its sold-out flag for it.
func stockBackChannel(prefix string) string { return prefix + "stock-back" }

// requestID is the key remembering the order a shopper's request id got:
// rid + len(user) + ":" + user + ":" + request id. The length makes the name
// injective, although both ids may contain ':' — user "a:b" with request
// "c" and user "a" with request "b:c" get different keys.
func (k keys) requestID(user, requestID string) string {
	return k.rid + strconv.Itoa(len(user)) + ":" + user + ":" + requestID
}

// rate is the key of a shopper's rate budget for the SKU (STRING with a
// TTL): ratePfx + len(user) + ":" + user.
func (k keys) rate(user string) string {
	return k.ratePfx + strconv.Itoa(len(user)) + ":" + user
}

// PartOf returns the part of sku an order was taken from: the bucket its
// id names (internal/orderid), bucket 0 for an id that names none of sku.
func PartOf(sku uint64, orderID string) Part {
	if got, bucket, _, ok := orderid.Parse(orderID); ok && got == sku {
		return Part{SKU: sku, Bucket: bucket}
	}
	return Part{SKU: sku}
}
