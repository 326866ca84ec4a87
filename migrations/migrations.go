// Package migrations holds the SQL schema as versioned goose migrations, one
// set per dialect (mysql/ for MySQL and MariaDB, sqlite/ for the embedded
// mode), embedded in the binary so `seckill migrate` and `seckill serve` need
// no files on disk.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
)

//go:embed mysql/*.sql sqlite/*.sql
var files embed.FS

// Dialects.
const (
	MySQL  = "mysql"
	SQLite = "sqlite"
)

// provider returns the goose provider for dialect; with locked, on MySQL,
// its writes hold the database's migration lock (mysqlLock).
func provider(db *sql.DB, dialect string, locked bool) (*goose.Provider, error) {
	var gd goose.Dialect
	var opts []goose.ProviderOption
	switch dialect {
	case MySQL:
		gd = goose.DialectMySQL
		if locked {
			opts = append(opts, goose.WithSessionLocker(&mysqlLock{wait: LockWait}))
		}
	case SQLite:
		gd = goose.DialectSQLite3
	default:
		return nil, fmt.Errorf("migrations: unknown dialect %q", dialect)
	}
	sub, err := fs.Sub(files, dialect)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return goose.NewProvider(gd, db, sub, opts...)
}

// Up applies every pending migration and returns the versions it applied.
// On MySQL it holds a lock on the database while it does, so processes
// started together migrate one after the other; it waits up to LockWait (or
// until ctx ends) for the lock and then fails with ErrLockTimeout. On TiDB
// it first turns CHECK constraints on (ErrChecksOff when it may not), and
// adds those a database migrated without them lacks.
func Up(ctx context.Context, db *sql.DB, dialect string) ([]int64, error) {
	p, err := provider(db, dialect, true)
	if err != nil {
		return nil, err
	}
	var after func() error
	if dialect == MySQL {
		tidb, err := IsTiDB(ctx, db)
		if err != nil {
			return nil, err
		}
		if tidb {
			if after, err = upTiDB(ctx, db); err != nil {
				return nil, err
			}
		}
		// Provider.Up first asks HasPending, which creates the version table
		// without the lock when it is missing, and another process holding
		// the lock would then find the table without its first row. Status
		// takes the lock, so the table is created whole (or found so) first.
		if _, err := p.Status(ctx); err != nil {
			return nil, fmt.Errorf("migrations: up: %w", err)
		}
	}
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: up: %w", err)
	}
	if after != nil {
		if err := after(); err != nil {
			return nil, err
		}
	}
	applied := make([]int64, 0, len(results))
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}

// Pending reports how many migrations are not applied yet. It does not wait
// for a process that is migrating, and writes nothing.
func Pending(ctx context.Context, db *sql.DB, dialect string) (int, error) {
	p, err := provider(db, dialect, false)
	if err != nil {
		return 0, err
	}
	if dialect == MySQL {
		// goose's Status would create its version table when it is
		// missing, which only Up may do, under the lock.
		var exists bool
		err := db.QueryRowContext(ctx, `SELECT COUNT(*) > 0 FROM information_schema.tables
			WHERE table_schema = DATABASE() AND table_name = ?`, goose.DefaultTablename).Scan(&exists)
		if err != nil {
			return 0, fmt.Errorf("migrations: status: %w", err)
		}
		if !exists {
			return len(p.ListSources()), nil
		}
	}
	status, err := p.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrations: status: %w", err)
	}
	n := 0
	for _, s := range status {
		if s.State == goose.StatePending {
			n++
		}
	}
	return n, nil
}
