package queue

import "github.com/seckill/seckill/internal/rkey"

// DefaultPrefix is the key prefix used when Options.Prefix is empty.
const DefaultPrefix = rkey.DefaultPrefix

// keys holds every Redis name of one queue. All of them share the queue's
// hash tag, so each script touches a single Cluster slot; they are built here
// and nowhere else.
type keys struct {
	ready    string // ZSET id -> due time (ms): pending tasks, due or delayed
	inflight string // ZSET id -> lease deadline (ms): claimed tasks
	data     string // HASH id -> payload
	meta     string // HASH id -> "attempts|token|max_attempts|enqueued_ms|type"
	dead     string // ZSET id -> time of death (ms): dead letters
	err      string // HASH id -> last error text
	wake     string // pub/sub channel announcing a new earliest due time
}

func newKeys(prefix, name string) keys {
	base := prefix + rkey.Tag(name) + ":q:"
	return keys{
		ready:    base + "ready",
		inflight: base + "inflight",
		data:     base + "data",
		meta:     base + "meta",
		dead:     base + "dead",
		err:      base + "err",
		wake:     base + "wake",
	}
}

// all is the KEYS list every internal script receives (see lua/common.lua).
func (k keys) all() []string {
	return []string{k.ready, k.inflight, k.data, k.meta, k.dead, k.err, k.wake}
}

// enqueue is the KEYS list of the enqueue library, in queue_enqueue's order.
func (k keys) enqueue() []string {
	return []string{k.ready, k.data, k.meta, k.wake}
}
