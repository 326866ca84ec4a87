package migrations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/migrations"
)

// Orders written before the support columns have no cancel reason and owe
// no refund; the migration goes down and up again.
func TestOrdersSupportColumns(t *testing.T) {
	for _, tc := range dialects {
		t.Run(tc.dialect, func(t *testing.T) {
			ctx := context.Background()
			db, p := tc.at(t, 4)
			_, err := db.ExecContext(ctx, `INSERT INTO orders (order_id, sku_id, user_id, qty, price_cents, status, created_at, persisted_at, expires_at, updated_at)
				VALUES ('1-00000000000000000000000a', 1, 'alice', 1, 100, 'paid', '2026-11-11 00:00:00', '2026-11-11 00:00:00', '2026-11-11 00:15:00', '2026-11-11 00:00:00')`)
			require.NoError(t, err)

			applied, err := migrations.Up(ctx, db, tc.dialect)
			require.NoError(t, err)
			assert.Contains(t, applied, int64(5))
			var reason, refund *string
			require.NoError(t, db.QueryRowContext(ctx, `SELECT cancel_reason, refund FROM orders`).Scan(&reason, &refund))
			assert.Nil(t, reason)
			assert.Nil(t, refund)
			_, err = db.ExecContext(ctx, `UPDATE orders SET status = 'cancelled', cancel_reason = ?, refund = 'due'`, strings.Repeat("é", 500))
			require.NoError(t, err, "a reason of 500 characters fits")

			_, err = p.DownTo(ctx, 4)
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, `SELECT cancel_reason FROM orders`)
			require.Error(t, err, "the column is gone")
			_, err = migrations.Up(ctx, db, tc.dialect)
			require.NoError(t, err)
			require.NoError(t, db.QueryRowContext(ctx, `SELECT cancel_reason, refund FROM orders`).Scan(&reason, &refund))
			assert.Nil(t, reason)
		})
	}
}
