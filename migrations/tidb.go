package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// ErrChecksOff means the server is TiDB with tidb_enable_check_constraint
// OFF, and the migrating user may not turn it on: TiDB would then drop the
// CHECK constraints the schema relies on (sold never above the stock)
// without an error.
var ErrChecksOff = errors.New("TiDB's tidb_enable_check_constraint is OFF, so it would drop the schema's CHECK constraints; " +
	"SET GLOBAL tidb_enable_check_constraint = ON as an administrator, or grant the migrating user SYSTEM_VARIABLES_ADMIN")

// ErrAutoIDCache means a TiDB database's outbox tables were made without
// AUTO_ID_CACHE 1 (by a seckill that could not finish migrating on TiDB):
// their ids would come from ranges cached per TiDB server, out of the
// order the dispatcher relies on.
var ErrAutoIDCache = errors.New("the outbox tables of this TiDB database were made without AUTO_ID_CACHE 1, " +
	"which TiDB cannot add to a table: migrate a new database")

// orderedTables are the tables whose AUTO_INCREMENT ids must follow the
// order they are asked for (mysql/00010_outbox.sql, 00011_outbox_batches.sql).
var orderedTables = []string{"outbox", "outbox_batches"}

// checks are the CHECK constraints of the schema (mysql/00001_init.sql), by
// name: the database's own guard against overselling, whatever Redis says.
var checks = []struct{ table, name, clause string }{
	{"skus", "skus_sold_within_stock", "sold >= 0 AND sold <= stock_total"},
	{"skus", "skus_price_positive", "price_cents >= 0"},
	{"orders", "orders_qty_positive", "qty > 0"},
}

// IsTiDB reports whether db is a TiDB server.
func IsTiDB(ctx context.Context, db *sql.DB) (bool, error) {
	var v string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
		return false, fmt.Errorf("migrations: server version: %w", err)
	}
	return strings.Contains(v, "TiDB"), nil
}

// enableChecks turns TiDB's CHECK constraints on when they are off (a
// global setting, OFF by default): without it TiDB parses a CHECK and drops
// it. ErrChecksOff when the user may not.
func enableChecks(ctx context.Context, db *sql.DB) error {
	var on string
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.tidb_enable_check_constraint").Scan(&on); err != nil {
		return fmt.Errorf("migrations: tidb_enable_check_constraint: %w", err)
	}
	if on == "1" || strings.EqualFold(on, "ON") {
		return nil
	}
	if _, err := db.ExecContext(ctx, "SET GLOBAL tidb_enable_check_constraint = ON"); err != nil {
		return fmt.Errorf("migrations: %w (%w)", ErrChecksOff, err)
	}
	return nil
}

// addMissingChecks adds the schema's CHECK constraints a TiDB database
// lacks because it was migrated while they were off. It runs under the
// migration lock, after the migrations.
func addMissingChecks(ctx context.Context, conn *sql.Conn) error {
	rows, err := conn.QueryContext(ctx, `SELECT constraint_name FROM information_schema.check_constraints
		WHERE constraint_schema = DATABASE()`)
	if err != nil {
		return fmt.Errorf("migrations: list CHECK constraints: %w", err)
	}
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			_ = rows.Close()
			return fmt.Errorf("migrations: list CHECK constraints: %w", err)
		}
		have[name] = true
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("migrations: list CHECK constraints: %w", err)
	}
	for _, c := range checks {
		if have[c.name] {
			continue
		}
		q := fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s CHECK (%s)", c.table, c.name, c.clause)
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("migrations: add CHECK %s: %w", c.name, err)
		}
	}
	return nil
}

// checkAutoIDCache reports ErrAutoIDCache when an ordered table was made
// without AUTO_ID_CACHE 1.
func checkAutoIDCache(ctx context.Context, conn *sql.Conn) error {
	for _, t := range orderedTables {
		var name, create string
		if err := conn.QueryRowContext(ctx, "SHOW CREATE TABLE "+t).Scan(&name, &create); err != nil {
			return fmt.Errorf("migrations: %s: %w", t, err)
		}
		if !strings.Contains(create, "AUTO_ID_CACHE=1") {
			return fmt.Errorf("migrations: %w (%s)", ErrAutoIDCache, t)
		}
	}
	return nil
}

// upTiDB prepares a TiDB server before the migrations (CHECK constraints
// on) and returns what to run after them, under the migration lock.
func upTiDB(ctx context.Context, db *sql.DB) (after func() error, err error) {
	if err := enableChecks(ctx, db); err != nil {
		return nil, err
	}
	return func() error {
		conn, err := db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("migrations: %w", err)
		}
		defer func() { _ = conn.Close() }()
		l := &mysqlLock{wait: LockWait}
		if err := l.SessionLock(ctx, conn); err != nil {
			return err
		}
		defer func() { _ = l.SessionUnlock(context.WithoutCancel(ctx), conn) }()
		if err := addMissingChecks(ctx, conn); err != nil {
			return err
		}
		return checkAutoIDCache(ctx, conn)
	}, nil
}
