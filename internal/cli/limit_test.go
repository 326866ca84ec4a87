package cli

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A SKU's limit_counts_cancelled comes from --limit-counts-cancelled, a YAML
// key or an optional CSV column; left out, a new SKU counts cancelled orders
// and a re-seed keeps the setting. A value that is not a boolean is refused
// and nothing is written.
func TestSeedLimitCountsCancelled(t *testing.T) {
	run, db := onServices(t)
	counts := func(id int) bool {
		t.Helper()
		var v bool
		require.NoError(t, db.QueryRow("SELECT limit_counts_cancelled FROM skus WHERE id = ?", id).Scan(&v))
		return v
	}
	sku := func(id int, extra ...string) []string {
		return append([]string{"seed", "--id", fmt.Sprint(id), "--name", "Phone", "--price-cents", "1", "--stock", "3",
			"--per-user-limit", "1", "--starts-at", seedStart, "--ends-at", seedEnd}, extra...)
	}

	out, err := run(sku(31)...)
	require.NoError(t, err)
	assert.Contains(t, out, `"limit_counts_cancelled":true`, "left out, a new SKU counts them")
	out, err = run(sku(32, "--limit-counts-cancelled=false")...)
	require.NoError(t, err)
	assert.Contains(t, out, `"limit_counts_cancelled":false`)
	_, err = run("seed", "--id", "32", "--stock", "4")
	require.NoError(t, err)
	assert.False(t, counts(32), "a re-seed without the flag keeps it")
	_, err = run("seed", "--id", "32", "--limit-counts-cancelled")
	require.NoError(t, err)
	assert.True(t, counts(32))

	const window = seedStart + "," + seedEnd
	_, err = run("seed", "--file", writeFile(t, "l.yaml",
		"- {id: 33, name: Y, price_cents: 1, stock: 3, per_user_limit: 1, starts_at: "+seedStart+", ends_at: "+seedEnd+", limit_counts_cancelled: false}\n"+
			"- {id: 34, name: Y, price_cents: 1, stock: 3, per_user_limit: 1, starts_at: "+seedStart+", ends_at: "+seedEnd+"}\n"))
	require.NoError(t, err)
	_, err = run("seed", "--file", writeFile(t, "l.csv", "id,name,price_cents,stock,per_user_limit,starts_at,ends_at,limit_counts_cancelled\n"+
		"35,C,1,3,1,"+window+",false\n36,C,1,3,1,"+window+",\n"))
	require.NoError(t, err)
	_, err = run("seed", "--file", writeFile(t, "keep.csv", "id,stock,limit_counts_cancelled\n35,5,\n"))
	require.NoError(t, err, "an empty cell keeps the setting")
	for id, want := range map[int]bool{31: true, 33: false, 34: true, 35: false, 36: true} {
		assert.Equal(t, want, counts(id), "sku %d", id)
	}

	for _, bad := range [][]string{
		{"seed", "--file", writeFile(t, "bad.csv", "id,limit_counts_cancelled\n35,sometimes\n")},
		{"seed", "--file", writeFile(t, "bad.yaml", "- {id: 35, limit_counts_cancelled: sometimes}\n")},
		sku(37, "--limit-counts-cancelled=sometimes"),
	} {
		_, err := run(bad...)
		assert.Equal(t, ExitBadConfig, ExitCode(err), "%v: %v", bad, err)
	}
	assert.False(t, counts(35), "the refused seeds wrote nothing")
}
