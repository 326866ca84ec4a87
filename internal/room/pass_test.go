package room

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A pass is the shopper's, for one SKU, until it expires, signed by a key
// the signer holds; a rotated key keeps verifying until dropped.
func TestPassIsBoundAndSigned(t *testing.T) {
	old, err := NewSigner([]string{strings.Repeat("o", 32)})
	require.NoError(t, err)
	rotated, err := NewSigner([]string{strings.Repeat("n", 32), strings.Repeat("o", 32)})
	require.NoError(t, err)
	fresh, err := NewSigner([]string{strings.Repeat("n", 32)})
	require.NoError(t, err)
	exp := t0.Add(time.Minute)
	pass := old.Sign(7, "tabc", "alice", exp)
	assert.Less(t, len(pass), MaxPassLen)

	ticket, until, err := old.Check(pass, 7, "alice", t0)
	require.NoError(t, err)
	assert.Equal(t, "tabc", ticket)
	assert.Equal(t, exp.UnixMilli(), until.UnixMilli(), "the expiry it was signed with")
	_, _, err = rotated.Check(pass, 7, "alice", t0)
	assert.NoError(t, err, "an old key still verifies during a rotation")
	_, _, err = fresh.Check(pass, 7, "alice", t0)
	assert.ErrorIs(t, err, ErrPassInvalid, "a dropped key no longer does")
	_, _, err = old.Check(rotated.Sign(7, "tabc", "alice", exp), 7, "alice", t0)
	assert.ErrorIs(t, err, ErrPassInvalid, "a key the signer does not hold")

	for name, tc := range map[string]struct {
		pass, user string
		sku        uint64
		now        time.Time
	}{
		"another shopper": {pass, "bob", 7, t0},
		"another sku":     {pass, "alice", 8, t0},
		"expired":         {pass, "alice", 7, exp},
		"another ticket":  {strings.Replace(pass, ".tabc.", ".tabd.", 1), "alice", 7, t0},
		"later expiry":    {strings.Replace(pass, ".1893553260000.", ".1893553270000.", 1), "alice", 7, t0},
		"not a pass":      {"hello", "alice", 7, t0},
		"a part too many": {pass + ".x", "alice", 7, t0},
		"a short MAC":     {pass[:len(pass)-1], "alice", 7, t0},
		"another MAC":     {pass[:len(pass)-1] + string(pass[len(pass)-1]^1), "alice", 7, t0},
		"no MAC":          {pass[:strings.LastIndexByte(pass, '.')+1], "alice", 7, t0},
		"too long":        {pass + strings.Repeat("x", MaxPassLen), "alice", 7, t0},
		"empty":           {"", "alice", 7, t0},
	} {
		_, _, err := old.Check(tc.pass, tc.sku, tc.user, tc.now)
		assert.ErrorIs(t, err, ErrPassInvalid, name)
	}
	_, err = NewSigner([]string{"short"})
	assert.Error(t, err)
	_, err = NewSigner(nil)
	assert.Error(t, err)
}

// A valid pass is checked without allocating: it runs on every buy of a
// SKU with a room.
func TestPassCheckAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop what it holds")
	}
	s, err := NewSigner([]string{strings.Repeat("k", 32)})
	require.NoError(t, err)
	pass := s.Sign(7, "tabc", "alice", t0.Add(time.Minute))
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := s.Check(pass, 7, "alice", t0); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

func BenchmarkPassCheck(b *testing.B) {
	s, err := NewSigner([]string{strings.Repeat("k", 32)})
	require.NoError(b, err)
	pass := s.Sign(7, "tchoxykej46qs4opvrt2do57xpi", "shopper-12345", t0.Add(time.Minute))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.Check(pass, 7, "shopper-12345", t0); err != nil {
			b.Fatal(err)
		}
	}
}
