package orderid

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validReference reports whether ref is what every provider accepts: 32
// letters or digits.
func validReference(ref string) bool {
	if len(ref) != ReferenceLen {
		return false
	}
	for i := 0; i < len(ref); i++ {
		if refDigit(ref[i]) < 0 {
			return false
		}
	}
	return true
}

func TestReferenceReadsBackItsOrderID(t *testing.T) {
	now := time.Now()
	seen := map[string]string{}
	for _, sku := range []uint64{1, 42, 1 << 58, math.MaxInt64, math.MaxUint64} {
		for _, bucket := range []int{0, 1, 9, MaxBucket} {
			b := NewBatch(sku, bucket, now, 50)
			for i := range 50 {
				id := b.Order(i)
				ref, ok := Reference(id)
				require.True(t, ok, id)
				assert.True(t, validReference(ref), ref)
				again, _ := Reference(id)
				assert.Equal(t, ref, again, "the same on every call")
				back, ok := FromReference(ref)
				require.True(t, ok, ref)
				assert.Equal(t, id, back)
				if other, dup := seen[ref]; dup {
					t.Fatalf("%s and %s share reference %s", other, id, ref)
				}
				seen[ref] = id
			}
		}
	}
}

func TestReferencesOfTheExtremes(t *testing.T) {
	lowest := "1-" + strings.Repeat("0", 24)
	ref, ok := Reference(lowest)
	require.True(t, ok)
	assert.Equal(t, "00000000000000000000000000000012", ref, "SKU 1 is 1<<6 = 64 = 1*62 + 2")
	highest := "18446744073709551615.63-" + strings.Repeat("z", 24)
	ref, ok = Reference(highest)
	require.True(t, ok)
	assert.True(t, validReference(ref), ref)
	back, ok := FromReference(ref)
	require.True(t, ok)
	assert.Equal(t, highest, back)
}

func TestReferencesSortByTime(t *testing.T) {
	now := time.Now()
	a, _ := Reference(NewBatch(99, 3, now, 1).Order(0))
	b, _ := Reference(NewBatch(7, 0, now.Add(time.Millisecond), 1).Order(0))
	assert.Less(t, a, b)
}

func TestNotAReference(t *testing.T) {
	for _, ref := range []string{
		"",
		"short",
		strings.Repeat("0", 31),
		strings.Repeat("0", 33),
		strings.Repeat("0", 31) + "-",
		strings.Repeat("0", 31) + "_",
		strings.Repeat("0", 32), // SKU 0
		strings.Repeat("z", 32), // 62^32-1, above 2^190
		"pay_" + strings.Repeat("0", 28),
	} {
		_, ok := FromReference(ref)
		assert.False(t, ok, ref)
	}
	for _, id := range []string{"", "1-" + strings.Repeat("i", 24), "0-" + strings.Repeat("0", 24), "1.0-" + strings.Repeat("0", 24)} {
		_, ok := Reference(id)
		assert.False(t, ok, id)
	}
}

func FuzzReference(f *testing.F) {
	f.Add("42-0123456789abcdefghjkmnpq")
	f.Add("00000000000000000000000000000012")
	f.Add("18446744073709551615.63-zzzzzzzzzzzzzzzzzzzzzzzz")
	f.Fuzz(func(t *testing.T, s string) {
		if id, ok := FromReference(s); ok {
			ref, ok := Reference(id)
			if !ok || ref != s {
				t.Fatalf("FromReference(%q) = %q, whose reference is %q, %v", s, id, ref, ok)
			}
		}
		if ref, ok := Reference(s); ok {
			if !validReference(ref) {
				t.Fatalf("Reference(%q) = %q", s, ref)
			}
			id, ok := FromReference(ref)
			if !ok || id != s {
				t.Fatalf("Reference(%q) = %q, which reads back %q, %v", s, ref, id, ok)
			}
		}
	})
}

// BenchmarkReference is what the drain adds per order it writes (the buy
// path makes no reference).
func BenchmarkReference(b *testing.B) {
	id := NewBatch(42, 3, time.Now(), 1).Order(0)
	for b.Loop() {
		if _, ok := Reference(id); !ok {
			b.Fatal(id)
		}
	}
}
