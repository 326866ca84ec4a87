package migrations_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	_ "github.com/glebarez/go-sqlite"
	"github.com/go-sql-driver/mysql"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/migrations"
)

// dialect opens a fresh database of one dialect.
type dialect struct {
	dialect string
	goose   goose.Dialect
	open    func(t *testing.T) *sql.DB
}

// at opens a fresh database migrated up to version, and its goose provider
// to move it further; the database is closed with the test.
func (d dialect) at(t *testing.T, version int64) (*sql.DB, *goose.Provider) {
	t.Helper()
	db := d.open(t)
	t.Cleanup(func() { _ = db.Close() })
	p, err := goose.NewProvider(d.goose, db, os.DirFS(d.dialect))
	require.NoError(t, err)
	_, err = p.UpTo(t.Context(), version)
	require.NoError(t, err)
	return db, p
}

// dialects opens a fresh database of each dialect.
var dialects = []dialect{
	{migrations.MySQL, goose.DialectMySQL, func(t *testing.T) *sql.DB {
		db, err := sql.Open("mysql", testsvc.MySQL(t))
		require.NoError(t, err)
		return db
	}},
	{migrations.SQLite, goose.DialectSQLite3, func(t *testing.T) *sql.DB {
		db, err := sql.Open("sqlite", "file:"+t.TempDir()+"/m.db")
		require.NoError(t, err)
		return db
	}},
}

func TestUpIsIdempotent(t *testing.T) {
	for _, tc := range dialects {
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
			_, err = db.ExecContext(ctx, `SELECT stock_total, sold, buckets FROM skus`)
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, `SELECT sku_id, user_id, qty, status, fence FROM orders`)
			require.NoError(t, err)
		})
	}
}

// SKUs created before the buckets column keep their stock in one bucket, and
// the migration goes down and up again.
func TestBucketsDefaultToOne(t *testing.T) {
	for _, tc := range dialects {
		t.Run(tc.dialect, func(t *testing.T) {
			ctx := context.Background()
			db, p := tc.at(t, 2)
			_, err := db.ExecContext(ctx, `INSERT INTO skus (name, price_cents, stock_total, sold, per_user_limit, starts_at, ends_at, created_at, updated_at)
				VALUES ('old', 100, 10, 0, 1, '2026-11-11 00:00:00', '2026-11-11 01:00:00', '2026-11-11 00:00:00', '2026-11-11 00:00:00')`)
			require.NoError(t, err)

			applied, err := migrations.Up(ctx, db, tc.dialect)
			require.NoError(t, err)
			assert.Contains(t, applied, int64(3))
			var buckets int
			require.NoError(t, db.QueryRowContext(ctx, `SELECT buckets FROM skus WHERE name = 'old'`).Scan(&buckets))
			assert.Equal(t, 1, buckets)

			_, err = p.DownTo(ctx, 2)
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, `SELECT buckets FROM skus`)
			require.Error(t, err, "the column is gone")
			_, err = migrations.Up(ctx, db, tc.dialect)
			require.NoError(t, err)
			require.NoError(t, db.QueryRowContext(ctx, `SELECT buckets FROM skus WHERE name = 'old'`).Scan(&buckets))
			assert.Equal(t, 1, buckets)
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

// Instances started together on a fresh database (a first deploy, a rollout)
// migrate one at a time: each waits for the others and finds the schema done.
func TestConcurrentUpOnAFreshDatabase(t *testing.T) {
	for round := range 3 {
		t.Run(fmt.Sprint("empty/", round), func(t *testing.T) { concurrentUp(t, false) })
		t.Run(fmt.Sprint("version-table/", round), func(t *testing.T) { concurrentUp(t, true) })
	}
}

// concurrentUp migrates a fresh database from three pools at once. With
// versionTable, goose's version table is there already (an earlier start
// made it, say), so that no process waits on making it and all reach the
// first migration together.
func concurrentUp(t *testing.T, versionTable bool) {
	dsn := testsvc.MySQL(t)
	ctx := context.Background()
	const n = 3
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, n)
	applied := make([][]int64, n)
	for i := range n {
		db, err := sql.Open("mysql", dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		require.NoError(t, db.PingContext(ctx))
		wg.Go(func() {
			<-start
			applied[i], errs[i] = migrations.Up(ctx, db, migrations.MySQL)
		})
	}
	probe, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer probe.Close()
	if versionTable {
		gp, err := goose.NewProvider(goose.DialectMySQL, probe, os.DirFS("mysql"))
		require.NoError(t, err)
		v, err := gp.GetDBVersion(ctx)
		require.NoError(t, err)
		require.Zero(t, v)
	}
	close(start)
	wg.Wait()
	total := 0
	for i := range n {
		require.NoError(t, errs[i], "instance %d", i)
		total += len(applied[i])
	}

	pending, err := migrations.Pending(ctx, probe, migrations.MySQL)
	require.NoError(t, err)
	assert.Zero(t, pending)
	var rows int
	require.NoError(t, probe.QueryRowContext(ctx, `SELECT COUNT(*) FROM goose_db_version WHERE version_id > 0`).Scan(&rows))
	assert.Positive(t, rows)
	assert.Equal(t, rows, total, "each migration applied once, by one instance")
}

// While another process holds the database's migration lock, Up waits and
// then fails saying so, having changed nothing.
func TestUpWaitsForTheMigrationLock(t *testing.T) {
	dsn := testsvc.MySQL(t)
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err)
	ctx := context.Background()
	holder, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer holder.Close()
	conn, err := holder.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	var got int
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", "seckill.migrate:"+cfg.DBName).Scan(&got))
	require.Equal(t, 1, got)

	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer db.Close()
	// A readiness check does not wait for a migration, and writes nothing.
	pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer pcancel()
	n, err := migrations.Pending(pctx, db, migrations.MySQL)
	require.NoError(t, err)
	assert.Positive(t, n)

	wctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	_, err = migrations.Up(wctx, db, migrations.MySQL)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "migration lock")
	assert.Contains(t, err.Error(), "held by another process")
	var tables int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ?`, cfg.DBName).Scan(&tables))
	assert.Zero(t, tables, "nothing written while the lock is held")

	var released int
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", "seckill.migrate:"+cfg.DBName).Scan(&released))
	require.Equal(t, 1, released)
	applied, err := migrations.Up(ctx, db, migrations.MySQL)
	require.NoError(t, err)
	assert.NotEmpty(t, applied)
}
