package migrations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/migrations"
)

// SKUs created before limit_counts_cancelled keep the reading they were sold
// under (false: a cancel gives the shopper's count back); a row written
// after it without the column counts cancelled orders. The migration goes
// down and up again.
func TestLimitCountsCancelledColumn(t *testing.T) {
	for _, tc := range dialects {
		t.Run(tc.dialect, func(t *testing.T) {
			ctx := context.Background()
			db, p := tc.at(t, 7)
			insert := func(name string) {
				t.Helper()
				_, err := db.ExecContext(ctx, `INSERT INTO skus (name, price_cents, stock_total, sold, per_user_limit, starts_at, ends_at, created_at, updated_at)
					VALUES (?, 100, 10, 0, 1, '2026-11-11 00:00:00', '2026-11-11 01:00:00', '2026-11-11 00:00:00', '2026-11-11 00:00:00')`, name)
				require.NoError(t, err)
			}
			counts := func(name string) bool {
				t.Helper()
				var v bool
				require.NoError(t, db.QueryRowContext(ctx, `SELECT limit_counts_cancelled FROM skus WHERE name = ?`, name).Scan(&v))
				return v
			}
			insert("old")

			applied, err := migrations.Up(ctx, db, tc.dialect)
			require.NoError(t, err)
			assert.Contains(t, applied, int64(8))
			assert.False(t, counts("old"), "an existing SKU keeps the reading it was sold under")
			insert("new")
			assert.True(t, counts("new"), "the column's default is the stricter reading")

			_, err = p.DownTo(ctx, 7)
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, `SELECT limit_counts_cancelled FROM skus`)
			require.Error(t, err, "the column is gone")
			_, err = migrations.Up(ctx, db, tc.dialect)
			require.NoError(t, err)
			assert.False(t, counts("old"))
		})
	}
}
