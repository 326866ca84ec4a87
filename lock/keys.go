package lock

import "github.com/seckill/seckill/internal/rkey"

// DefaultPrefix is the key prefix used when Options.Prefix is empty.
const DefaultPrefix = rkey.DefaultPrefix

// Every Redis key and pub/sub channel of the package is built here, so the
// layout can be read in one place. For prefix "seckill:" and name "sku:42"
// (or "{sku:42}", which keeps its tag):
//
//	seckill:lock:{sku:42}           mutex (string: token)
//	seckill:lock:{sku:42}:fence     fencing counter (string: int64, no TTL)
//	seckill:lock:{sku:42}:re        reentrant lock (hash: owner id -> hold count)
//	seckill:lock:{sku:42}:rw        read-write lock (hash: r:/w:/p:<token> -> expiry ms)
//
// Each lock publishes its release on a pub/sub channel named like its key
// (channels and keys are separate namespaces), so a script derives the
// channel from KEYS[1] and no name is built on the hot path.
//
// All keys of one name share the hash tag, so each script touches one Cluster
// slot, and a caller's own keys tagged "{sku:42}" live in the same slot too.
type keys struct {
	base string // prefix + "lock:" + tag
}

func newKeys(prefix, name string) keys {
	return keys{base: prefix + "lock:" + rkey.Tag(name)}
}

func (k keys) mutex() string     { return k.base }
func (k keys) fence() string     { return k.base + ":fence" }
func (k keys) reentrant() string { return k.base + ":re" }
func (k keys) rw() string        { return k.base + ":rw" }
