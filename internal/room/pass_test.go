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

	ticket, err := old.Check(pass, 7, "alice", t0)
	require.NoError(t, err)
	assert.Equal(t, "tabc", ticket)
	_, err = rotated.Check(pass, 7, "alice", t0)
	assert.NoError(t, err, "an old key still verifies during a rotation")
	_, err = fresh.Check(pass, 7, "alice", t0)
	assert.ErrorIs(t, err, ErrPassInvalid, "a dropped key no longer does")
	_, err = old.Check(rotated.Sign(7, "tabc", "alice", exp), 7, "alice", t0)
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
		"too long":        {pass + strings.Repeat("x", MaxPassLen), "alice", 7, t0},
		"empty":           {"", "alice", 7, t0},
	} {
		_, err := old.Check(tc.pass, tc.sku, tc.user, tc.now)
		assert.ErrorIs(t, err, ErrPassInvalid, name)
	}
	_, err = NewSigner([]string{"short"})
	assert.Error(t, err)
	_, err = NewSigner(nil)
	assert.Error(t, err)
}
