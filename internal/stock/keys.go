package stock

import "strconv"

// Tag is the hash tag of a SKU, "{sku:42}". Every key of the SKU — stock,
// buyers, request ids, its lock (internal/lock) and its order queue
// (internal/queue) — carries it, so one script can touch them all, on
// standalone Redis and in one Redis Cluster slot alike.
func Tag(sku uint64) string { return "{sku:" + strconv.FormatUint(sku, 10) + "}" }

// keys holds the Redis names of one SKU's stock state.
type keys struct {
	stock    string // HASH total, left, limit, fence
	buyers   string // HASH user id -> units bought
	staging  string // HASH buyers being rebuilt
	returned string // SET ids of orders whose units came back
	retstage string // SET returned ids being rebuilt
	paused   string // STRING token of a rebuild in progress (with a TTL)
	rid      string // prefix of request-id keys (see requestID)
	ratePfx  string // prefix of per-shopper rate keys (see rate)
}

func newKeys(prefix string, sku uint64) keys {
	base := prefix + Tag(sku) + ":"
	return keys{
		stock:    base + "stock",
		buyers:   base + "buyers",
		staging:  base + "buyers:staging",
		returned: base + "returned",
		retstage: base + "returned:staging",
		paused:   base + "paused",
		rid:      base + "rid:",
		ratePfx:  base + "rate:",
	}
}

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
