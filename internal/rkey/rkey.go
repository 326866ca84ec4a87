// Package rkey builds Redis key names that keep related keys in one Redis
// Cluster hash slot.
//
// Redis Cluster hashes only the part of a key between the first '{' and the
// next '}' (the hash tag) when that part is non-empty. Every key of one queue
// or one SKU is built from the same tag, so each Lua script touches
// keys of a single slot and runs unchanged on standalone Redis and on Cluster.
package rkey

import "strings"

// DefaultPrefix starts every key of the queue and stock packages when
// their options give no prefix.
const DefaultPrefix = "seckill:"

// Tag returns name if it already carries a non-empty hash tag, such as
// "{sku:42}" or "orders{sku:42}", and "{" + name + "}" otherwise.
func Tag(name string) string {
	if HasTag(name) {
		return name
	}
	return "{" + name + "}"
}

// HasTag reports whether name contains a non-empty hash tag.
func HasTag(name string) bool {
	open := strings.IndexByte(name, '{')
	if open < 0 {
		return false
	}
	end := strings.IndexByte(name[open+1:], '}')
	return end > 0
}
