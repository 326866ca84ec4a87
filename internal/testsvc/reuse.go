package testsvc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// ServerMySQL is MySQL for a test whose seckill server migrates the
// database itself and then only reads and writes rows: on MySQL and MariaDB
// it is MySQL. On TiDB, where a new database costs seconds of DDL run one
// job at a time (creating it, the migrations, dropping it), it may instead
// be a database an earlier test of this process migrated and that passed,
// with every row but the migrations' record deleted: the server's
// migrations then find nothing to do. Its AUTO_INCREMENT ids go on from
// where the earlier test left them (one whose ids came near the end of
// their range is dropped instead). A test that failed hands its database
// back to be dropped, not reused.
//
// A package whose tests use it calls DropReused from its TestMain after
// m.Run, which drops the databases kept for reuse.
func ServerMySQL(t testing.TB) string {
	t.Helper()
	base := Env(t, EnvMySQL)
	tidb, err := reuse.isTiDB(base)
	if errors.Is(err, errUnreachable) {
		Missing(t, "%v; %s", err, startServicesMsg)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !tidb {
		return MySQL(t)
	}
	db := reuse.take(base)
	if db == nil {
		dsn, drop, err := Database(base)
		if err != nil {
			t.Fatal(err)
		}
		db = &reusable{base: base, dsn: dsn, drop: drop}
	}
	t.Cleanup(func() {
		if t.Failed() {
			reuse.discard(t, db)
			return
		}
		if err := db.empty(); err != nil {
			t.Log(err)
			reuse.discard(t, db)
			return
		}
		reuse.put(db)
	})
	return db.dsn
}

// DropReused drops the databases ServerMySQL kept for reuse and returns the
// first error.
func DropReused() error {
	reuse.mu.Lock()
	free := reuse.free
	reuse.free = nil
	reuse.mu.Unlock()
	var errs []error
	for _, dbs := range free {
		for _, db := range dbs {
			errs = append(errs, db.drop())
		}
	}
	return errors.Join(errs...)
}

// reuse is the process's pool of emptied TiDB databases, by server.
var reuse = &pool{}

type pool struct {
	mu     sync.Mutex
	server map[string]bool        // base DSN: the server is TiDB
	free   map[string][]*reusable // base DSN: databases ready for a test
}

type reusable struct {
	base, dsn string
	drop      func() error
}

func (p *pool) isTiDB(base string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if tidb, ok := p.server[base]; ok {
		return tidb, nil
	}
	cfg, err := mysql.ParseDSN(base)
	if err != nil {
		return false, fmt.Errorf("%s: %w", EnvMySQL, err)
	}
	cfg.DBName = ""
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return false, fmt.Errorf("open mysql: %w", err)
	}
	defer func() { _ = db.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return false, fmt.Errorf("mysql at %s %w: %w", cfg.Addr, errUnreachable, err)
	}
	if p.server == nil {
		p.server = map[string]bool{}
	}
	p.server[base] = strings.Contains(version, "TiDB")
	return p.server[base], nil
}

func (p *pool) take(base string) *reusable {
	p.mu.Lock()
	defer p.mu.Unlock()
	free := p.free[base]
	if len(free) == 0 {
		return nil
	}
	db := free[len(free)-1]
	p.free[base] = free[:len(free)-1]
	return db
}

func (p *pool) put(db *reusable) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free == nil {
		p.free = map[string][]*reusable{}
	}
	p.free[db.base] = append(p.free[db.base], db)
}

func (p *pool) discard(t testing.TB, db *reusable) {
	if err := db.drop(); err != nil {
		t.Log(err)
	}
}

// maxReusedID is the largest next AUTO_INCREMENT id of a database handed
// to another test: one that tried the end of an id's range (a SKU of id
// 2^63-1) would leave the next test no ids, which a new database has.
const maxReusedID = 1 << 40

// empty deletes every row of the database but goose's record of the
// migrations applied, in one transaction. It fails on tables that goose did
// not make (no record of migrations beside them) and on AUTO_INCREMENT ids
// past maxReusedID.
func (db *reusable) empty() error {
	conn, err := sql.Open("mysql", db.dsn)
	if err != nil {
		return fmt.Errorf("open %s: %w", db.dsn, err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rows, err := conn.QueryContext(ctx, `SELECT table_name, COALESCE(auto_increment, 0) FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'`)
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	var tables []string
	migrated := false
	for rows.Next() {
		var name string
		var next uint64
		if err := rows.Scan(&name, &next); err != nil {
			_ = rows.Close()
			return fmt.Errorf("list tables: %w", err)
		}
		if next > maxReusedID {
			_ = rows.Close()
			return fmt.Errorf("testsvc: %s's next AUTO_INCREMENT id is %d; dropping the database", name, next)
		}
		if name == "goose_db_version" {
			migrated = true
			continue
		}
		tables = append(tables, name)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	if !migrated && len(tables) > 0 {
		return errors.New("testsvc: the database has tables but no record of migrations; dropping it")
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("empty database: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, name := range tables {
		if _, err := tx.ExecContext(ctx, "DELETE FROM `"+name+"`"); err != nil {
			return fmt.Errorf("empty %s: %w", name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("empty database: %w", err)
	}
	return nil
}
