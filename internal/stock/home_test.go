package stock

import (
	"hash/fnv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A shopper's home bucket is FNV-1a of the user id modulo the buckets, the
// same on every instance, and bucket 0 for a SKU of one bucket.
func TestHomeIsFNV1aOfTheUserID(t *testing.T) {
	for _, user := range []string{"", "a", "alice@example.com", "user:42", "ü"} {
		h := fnv.New32a()
		_, _ = h.Write([]byte(user))
		for _, n := range []int{1, 3, 6, 64} {
			assert.Equal(t, int(h.Sum32()%uint32(n)), Home(7, n, user).Bucket, "%q of %d", user, n) //nolint:gosec // small n
		}
	}
	assert.Equal(t, Part{SKU: 7}, Home(7, 1, "anyone"))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = Home(7, 6, "alice@example.com") }), "no allocation")
}
