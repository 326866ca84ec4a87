package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/go-sql-driver/mysql"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/migrations"
)

// openSQL opens MySQL through GORM or, when no DSN is configured, the
// embedded SQLite database, and returns the dialect for migrations.
func openSQL(ctx context.Context, cfg config.MySQL, emb config.Embedded, log *slog.Logger) (*gorm.DB, string, error) {
	gcfg := &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		PrepareStmt:            false,
		DisableAutomaticPing:   true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	}
	if cfg.DSN == "" {
		return openSQLite(emb, gcfg, log)
	}
	mc, err := mysql.ParseDSN(cfg.DSN)
	if err != nil {
		return nil, "", fmt.Errorf("mysql.dsn: %w", err)
	}
	// The store keeps every time in UTC and scans DATETIME into time.Time.
	mc.ParseTime = true
	mc.Loc = time.UTC
	mc.InterpolateParams = true
	if mc.Params == nil {
		mc.Params = map[string]string{}
	}
	mc.Params["time_zone"] = "'+00:00'"
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, "", fmt.Errorf("mysql.dsn: %w", err)
	}
	sqlDB := sql.OpenDB(connector)
	sqlDB.SetMaxOpenConns(cfg.MaxOpenConns)
	sqlDB.SetMaxIdleConns(cfg.MaxIdleConns)
	sqlDB.SetConnMaxLifetime(cfg.ConnMaxLifetime)
	// Wait for the server before GORM asks it for its version; not for a
	// server that refuses the DSN itself.
	ping := func(ctx context.Context) error {
		err := sqlDB.PingContext(ctx)
		if bad := dsnRefused(err, mc); bad != nil {
			return permanent(bad)
		}
		return err
	}
	if err := retry(ctx, log, "mysql at "+mc.Addr, cfg.ConnectTimeout, ping); err != nil {
		_ = sqlDB.Close()
		return nil, "", err
	}
	db, err := gorm.Open(gormmysql.New(gormmysql.Config{Conn: sqlDB}), gcfg)
	if err != nil {
		_ = sqlDB.Close()
		return nil, "", fmt.Errorf("mysql: %w", err)
	}
	return db, migrations.MySQL, nil
}

// dsnRefused is the configuration error of a MySQL server that refuses the
// DSN itself, which waiting does not cure: a database that does not exist
// (1049), a user it refuses (1045), a user without rights on the database
// (1044). It is nil for any other error.
func dsnRefused(err error, mc *mysql.Config) error {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return nil
	}
	switch me.Number {
	case 1049:
		return &config.Error{Key: "mysql.dsn", Allowed: fmt.Sprintf("names database %q, which does not exist on %s: create it, or name one that does", mc.DBName, mc.Addr)}
	case 1044, 1045:
		// The server's message names the user and the database, never
		// the password.
		return &config.Error{Key: "mysql.dsn", Allowed: fmt.Sprintf("%s refuses it: %s", mc.Addr, me.Message)}
	}
	return nil
}

func openSQLite(emb config.Embedded, gcfg *gorm.Config, log *slog.Logger) (*gorm.DB, string, error) {
	path := emb.SQLitePath
	where := path
	if path == "" {
		// A named in-memory database shared by every connection of the pool.
		path = "file:seckill-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "?mode=memory&cache=shared"
		where = "memory"
	}
	dsn := path
	if emb.SQLitePath != "" {
		dsn = "file:" + path
	}
	dsn += sep(dsn) + "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_time_format=sqlite"
	db, err := gorm.Open(sqlite.Open(dsn), gcfg)
	if err != nil {
		return nil, "", fmt.Errorf("embedded sqlite: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, "", fmt.Errorf("embedded sqlite: %w", err)
	}
	// SQLite has one writer; one connection avoids SQLITE_BUSY between them.
	sqlDB.SetMaxOpenConns(1)
	log.Warn("EMBEDDED MODE: using an embedded SQLite database — set SECKILL_MYSQL_DSN for MySQL", "sqlite", where)
	return db, migrations.SQLite, nil
}

func sep(dsn string) string {
	for _, c := range dsn {
		if c == '?' {
			return "&"
		}
	}
	return "?"
}
