package testsvc

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A migrated database a passing test hands back comes to the next test of
// the process empty but for goose's record, on TiDB; on MariaDB every test
// gets a new one. One whose AUTO_INCREMENT neared its end is not reused.
func TestServerMySQLReusesEmptiedDatabasesOnTiDB(t *testing.T) {
	tidb, err := reuse.isTiDB(Env(t, EnvMySQL))
	if err != nil {
		Missing(t, "%v; %s", err, startServicesMsg)
	}
	migrate := func(t *testing.T, dsn string, next int64) {
		db, err := sql.Open("mysql", dsn)
		require.NoError(t, err)
		defer db.Close()
		for _, q := range []string{
			"CREATE TABLE IF NOT EXISTS goose_db_version (id BIGINT PRIMARY KEY AUTO_INCREMENT, version_id BIGINT NOT NULL)",
			"CREATE TABLE IF NOT EXISTS skus (id BIGINT UNSIGNED PRIMARY KEY AUTO_INCREMENT, name VARCHAR(10))",
			"INSERT INTO goose_db_version (version_id) VALUES (1)",
		} {
			_, err := db.Exec(q)
			require.NoError(t, err, q)
		}
		_, err = db.Exec("INSERT INTO skus (id, name) VALUES (?, 'x')", next)
		require.NoError(t, err)
	}
	rows := func(t *testing.T, dsn, table string) (n int) {
		db, err := sql.Open("mysql", dsn)
		require.NoError(t, err)
		defer db.Close()
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+table).Scan(&n))
		return n
	}

	var first, second, third string
	t.Run("first", func(t *testing.T) { first = ServerMySQL(t); migrate(t, first, 7) })
	t.Run("second", func(t *testing.T) {
		second = ServerMySQL(t)
		if !tidb {
			return
		}
		assert.Zero(t, rows(t, second, "skus"), "the rows of the test before are gone")
		assert.Equal(t, 1, rows(t, second, "goose_db_version"), "the record of the migrations stays")
		migrate(t, second, 1<<41)
	})
	t.Run("third", func(t *testing.T) { third = ServerMySQL(t) })
	if tidb {
		assert.Equal(t, first, second)
	} else {
		assert.NotEqual(t, first, second)
	}
	assert.NotEqual(t, second, third, "ids near their end: a new database")
	require.NoError(t, DropReused())
}
