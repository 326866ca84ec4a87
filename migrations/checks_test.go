package migrations_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/migrations"
)

// checkNames lists the CHECK constraints of db's current database.
func checkNames(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT constraint_name FROM information_schema.check_constraints
		WHERE constraint_schema = DATABASE() ORDER BY constraint_name`)
	require.NoError(t, err)
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		names = append(names, n)
	}
	require.NoError(t, rows.Err())
	return names
}

// The constraints Up restores on TiDB are the schema's, all of them.
func TestCheckConstraintsAreTheSchemas(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("mysql", testsvc.MySQL(t))
	require.NoError(t, err)
	defer db.Close()
	_, err = migrations.Up(t.Context(), db, migrations.MySQL)
	require.NoError(t, err)
	assert.ElementsMatch(t, migrations.CheckNames(), checkNames(t, db))
}

// A TiDB database migrated while CHECK constraints were off (TiDB's default)
// lacks them; Up adds them back, and the database refuses an oversell again.
func TestUpRestoresTheChecksOnTiDB(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open("mysql", testsvc.MySQL(t))
	require.NoError(t, err)
	defer db.Close()
	if tidb, err := migrations.IsTiDB(ctx, db); err != nil || !tidb {
		t.Skipf("TiDB only (make test-tidb): %v", err)
	}
	_, err = migrations.Up(ctx, db, migrations.MySQL)
	require.NoError(t, err)
	for _, q := range []string{
		"ALTER TABLE skus DROP CONSTRAINT skus_sold_within_stock",
		"ALTER TABLE orders DROP CONSTRAINT orders_qty_positive",
	} {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	require.Len(t, checkNames(t, db), 1)

	applied, err := migrations.Up(ctx, db, migrations.MySQL)
	require.NoError(t, err)
	assert.Empty(t, applied)
	assert.ElementsMatch(t, migrations.CheckNames(), checkNames(t, db))
	_, err = db.ExecContext(ctx, `INSERT INTO skus (name, price_cents, stock_total, sold, per_user_limit, starts_at, ends_at, created_at, updated_at)
		VALUES ('x', 100, 10, 10, 1, NOW(), NOW(), NOW(), NOW())`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `UPDATE skus SET sold = sold + 1`)
	assert.Error(t, err, "the CHECK constraint keeps sold <= stock_total")
}

// On TiDB the outbox's ids come from one allocator (AUTO_ID_CACHE 1), so
// that several TiDB servers hand them out in the order they are asked for;
// a database whose outbox was made otherwise is refused.
func TestOutboxIDsAreAllocatedInOrderOnTiDB(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open("mysql", testsvc.MySQL(t))
	require.NoError(t, err)
	defer db.Close()
	if tidb, err := migrations.IsTiDB(ctx, db); err != nil || !tidb {
		t.Skipf("TiDB only (make test-tidb): %v", err)
	}
	_, err = migrations.Up(ctx, db, migrations.MySQL)
	require.NoError(t, err)
	for _, table := range []string{"outbox", "outbox_batches"} {
		var name, create string
		require.NoError(t, db.QueryRowContext(ctx, "SHOW CREATE TABLE "+table).Scan(&name, &create))
		assert.Contains(t, create, "AUTO_ID_CACHE=1", table)
	}

	_, err = db.ExecContext(ctx, "RENAME TABLE outbox_batches TO outbox_batches_kept")
	require.NoError(t, err)
	// As TiDB makes a table by default: ids from ranges cached per server.
	_, err = db.ExecContext(ctx, "CREATE TABLE outbox_batches (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, PRIMARY KEY (id))")
	require.NoError(t, err)
	_, err = migrations.Up(ctx, db, migrations.MySQL)
	assert.ErrorIs(t, err, migrations.ErrAutoIDCache)
}
