package migrations

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/internal/storeerr"
)

// LockWait is how long Up waits for another process that is migrating the
// same MySQL database before it gives up with ErrLockTimeout.
const LockWait = 10 * time.Minute

// ErrLockTimeout means another process held the database's migration lock
// for longer than LockWait.
var ErrLockTimeout = errors.New("migration lock still held by another process")

// mysqlLock makes processes that migrate one MySQL database at the same time
// (instances of a first deploy or a rollout) take turns: each holds GET_LOCK
// on a name derived from the database while it migrates, and the next finds
// the schema done. The lock belongs to the connection goose migrates on, so
// a process that dies mid-migration does not leave it behind. SQLite needs
// none: only one process opens the embedded database.
type mysqlLock struct {
	wait time.Duration
	name string // set by SessionLock
}

// SessionLock waits for the lock in steps of a second, so that ctx can end
// the wait, for at most l.wait.
func (l *mysqlLock) SessionLock(ctx context.Context, conn *sql.Conn) error {
	var db sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&db); err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	if !db.Valid || db.String == "" {
		return errors.New("migration lock: the DSN names no database")
	}
	l.name = lockName(db.String)
	deadline := time.Now().Add(l.wait)
	for {
		var got sql.NullInt64
		err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 1)", l.name).Scan(&got)
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("waiting for migration lock %q held by another process: %w", l.name, ctx.Err())
		case storeerr.LockHeld(err):
			// TiDB reports some waits for a held lock as an error rather
			// than GET_LOCK's 0: the lock was not got, try again.
		case err != nil:
			return fmt.Errorf("migration lock %q: %w", l.name, err)
		case !got.Valid:
			return fmt.Errorf("migration lock %q: GET_LOCK failed", l.name)
		case got.Int64 == 1:
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %q for over %s; on MySQL, SELECT IS_USED_LOCK('%s') names the connection holding it",
				ErrLockTimeout, l.name, l.wait, l.name)
		}
	}
}

// SessionUnlock releases the lock. Its error is not reported: a connection
// that fails here is dropped, and the server releases its locks with it.
func (l *mysqlLock) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	// SELECT rather than DO: TiDB runs a prepared DO RELEASE_LOCK as a no-op.
	var released sql.NullInt64
	_ = conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", l.name).Scan(&released)
	return nil
}

// lockName is the lock's name for database db, within MySQL's 64 characters.
func lockName(db string) string {
	const prefix = "seckill.migrate:"
	if len(prefix)+len(db) <= 64 {
		return prefix + db
	}
	sum := sha256.Sum256([]byte(db))
	return prefix + hex.EncodeToString(sum[:24])
}
