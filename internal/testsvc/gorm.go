package testsvc

import (
	"database/sql"
	"testing"

	_ "github.com/go-sql-driver/mysql" // the driver of MySQL's DSN
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill/seckill/migrations"
)

// MigratedMySQL returns a database of the test's own (MySQL), with every
// migration applied, through GORM.
func MigratedMySQL(t testing.TB) *gorm.DB {
	t.Helper()
	sqlDB, err := sql.Open("mysql", MySQL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqlDB.Close() })
	if _, err := migrations.Up(t.Context(), sqlDB, migrations.MySQL); err != nil {
		t.Fatal(err)
	}
	db, err := gorm.Open(gormmysql.New(gormmysql.Config{Conn: sqlDB}), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	return db
}
