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

func provider(db *sql.DB, dialect string) (*goose.Provider, error) {
	var gd goose.Dialect
	switch dialect {
	case MySQL:
		gd = goose.DialectMySQL
	case SQLite:
		gd = goose.DialectSQLite3
	default:
		return nil, fmt.Errorf("migrations: unknown dialect %q", dialect)
	}
	sub, err := fs.Sub(files, dialect)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return goose.NewProvider(gd, db, sub)
}

// Up applies every pending migration and returns the versions it applied.
func Up(ctx context.Context, db *sql.DB, dialect string) ([]int64, error) {
	p, err := provider(db, dialect)
	if err != nil {
		return nil, err
	}
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: up: %w", err)
	}
	applied := make([]int64, 0, len(results))
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}

// Pending reports how many migrations are not applied yet.
func Pending(ctx context.Context, db *sql.DB, dialect string) (int, error) {
	p, err := provider(db, dialect)
	if err != nil {
		return 0, err
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
