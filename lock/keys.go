package lock

import "strings"

// Every Redis key and pub/sub channel of the package is built here, so the
// layout can be read in one place. For the default prefix "lock:" and name
// "sku:42" (or "{sku:42}", which keeps its tag):
//
//	lock:{sku:42}           mutex (string: token)
//	lock:{sku:42}:fence     fencing counter (string: int64, no TTL)
//	lock:{sku:42}:re        reentrant lock (hash: owner id -> hold count)
//	lock:{sku:42}:rw        read-write lock (hash: r:/w:/p:<token> -> expiry ms)
//
// Each lock publishes its release on a pub/sub channel named like its key
// (channels and keys are separate namespaces), so a script derives the
// channel from KEYS[1] and no name is built on the hot path.
//
// All keys of one name share the hash tag, so each script touches one Cluster
// slot, and a caller's own keys tagged "{sku:42}" live in the same slot too.
type keys struct {
	base string // prefix + tag
}

func newKeys(prefix, name string) keys {
	if hasTag(name) {
		return keys{base: prefix + name}
	}
	return keys{base: prefix + "{" + name + "}"} // one allocation, on the hot path
}

func (k keys) mutex() string     { return k.base }
func (k keys) fence() string     { return k.base + ":fence" }
func (k keys) reentrant() string { return k.base + ":re" }
func (k keys) rw() string        { return k.base + ":rw" }

// hasTag reports whether name already carries a non-empty Redis Cluster
// hash tag, such as "{sku:42}" or "orders{sku:42}"; a name without one is
// wrapped in braces.
func hasTag(name string) bool {
	open := strings.IndexByte(name, '{')
	return open >= 0 && strings.IndexByte(name[open+1:], '}') > 0
}
