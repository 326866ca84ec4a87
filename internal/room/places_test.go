package room

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Places keeps at most its bound, dropping the least recently seen first,
// and tells shoppers and SKUs apart.
func TestPlacesKeepTheRecentlySeen(t *testing.T) {
	p := newPlaces(100)
	ticket, _ := fixed("t" + fmt.Sprintf("%026d", 1))
	for i := range 100 {
		p.add(p.key(7, fmt.Sprint("u", i)), place{ticket: ticket, place: int64(i + 1)})
	}
	got, ok := p.get(p.key(7, "u0"))
	assert.True(t, ok)
	assert.EqualValues(t, 1, got.place)
	_, ok = p.get(p.key(8, "u0"))
	assert.False(t, ok, "another SKU")
	for i := 100; i < 150; i++ { // a new generation: u0, just seen, moves up
		p.add(p.key(7, fmt.Sprint("u", i)), place{place: int64(i + 1)})
	}
	_, ok = p.get(p.key(7, "u0"))
	assert.True(t, ok, "seen in the last generation")
	_, ok = p.get(p.key(7, "u1"))
	assert.False(t, ok, "not seen for a whole generation")
	assert.LessOrEqual(t, len(p.young)+len(p.old), 100)
	_, ok = fixed("short")
	assert.False(t, ok)
}
