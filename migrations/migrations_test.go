package migrations_test

import (
	"context"
	"database/sql"
	"testing"

	_ "github.com/glebarez/go-sqlite"
	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/migrations"
)

func TestUpIsIdempotent(t *testing.T) {
	for _, tc := range []struct {
		dialect string
		open    func(t *testing.T) *sql.DB
	}{
		{migrations.MySQL, func(t *testing.T) *sql.DB {
			db, err := sql.Open("mysql", testsvc.MySQL(t))
			require.NoError(t, err)
			return db
		}},
		{migrations.SQLite, func(t *testing.T) *sql.DB {
			db, err := sql.Open("sqlite", "file:"+t.TempDir()+"/m.db")
			require.NoError(t, err)
			return db
		}},
	} {
		t.Run(tc.dialect, func(t *testing.T) {
			ctx := context.Background()
			db := tc.open(t)
			defer db.Close()

			n, err := migrations.Pending(ctx, db, tc.dialect)
			require.NoError(t, err)
			assert.Positive(t, n)

			applied, err := migrations.Up(ctx, db, tc.dialect)
			require.NoError(t, err)
			assert.Len(t, applied, n)

			applied, err = migrations.Up(ctx, db, tc.dialect)
			require.NoError(t, err)
			assert.Empty(t, applied)

			n, err = migrations.Pending(ctx, db, tc.dialect)
			require.NoError(t, err)
			assert.Zero(t, n)

			// The columns outside checks read exist in both dialects.
			_, err = db.ExecContext(ctx, `SELECT stock_total, sold FROM skus`)
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, `SELECT sku_id, user_id, qty, status, fence FROM orders`)
			require.NoError(t, err)
		})
	}
}

func TestDatabaseRefusesOversell(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("mysql", testsvc.MySQL(t))
	require.NoError(t, err)
	defer db.Close()
	_, err = migrations.Up(ctx, db, migrations.MySQL)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO skus (name, price_cents, stock_total, sold, per_user_limit, starts_at, ends_at, created_at, updated_at)
		VALUES ('x', 100, 10, 10, 1, NOW(), NOW(), NOW(), NOW())`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `UPDATE skus SET sold = sold + 1`)
	assert.Error(t, err, "the CHECK constraint keeps sold <= stock_total")
}

func TestUnknownDialect(t *testing.T) {
	_, err := migrations.Up(context.Background(), nil, "oracle")
	assert.ErrorContains(t, err, "unknown dialect")
}
