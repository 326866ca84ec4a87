package auth

import (
	"crypto/sha256"
	"sync"
	"time"
)

const (
	// cacheAge bounds how long a verified token is answered from memory.
	// A token verified with a JWK Set is verified again once the set is
	// fetched again, so a withdrawn key stops working with the next fetch.
	cacheAge    = time.Minute
	cacheShards = 16
	shardCap    = 4096 // tokens per shard; a full shard is emptied
)

// cache remembers tokens verified recently, by their SHA-256, so a shopper
// retrying or polling with the same token costs a hash instead of a
// signature check (RS256 about 30 µs, ES256 about 70 µs).
type cache struct {
	shards [cacheShards]struct {
		mu sync.Mutex
		m  map[[sha256.Size]byte]verified
	}
}

type verified struct {
	user  string
	until time.Time // the token's exp plus leeway, or cacheAge after verification
	keys  any       // the key set it was verified with; another set is a miss
}

func newCache() *cache {
	c := &cache{}
	for i := range c.shards {
		c.shards[i].m = make(map[[sha256.Size]byte]verified)
	}
	return c
}

func (c *cache) get(sum [sha256.Size]byte, keys any, now time.Time) (string, bool) {
	s := &c.shards[sum[0]%cacheShards]
	s.mu.Lock()
	v, ok := s.m[sum]
	s.mu.Unlock()
	if !ok || v.keys != keys || !now.Before(v.until) {
		return "", false
	}
	return v.user, true
}

func (c *cache) put(sum [sha256.Size]byte, v verified) {
	s := &c.shards[sum[0]%cacheShards]
	s.mu.Lock()
	if len(s.m) >= shardCap {
		clear(s.m)
	}
	s.m[sum] = v
	s.mu.Unlock()
}
