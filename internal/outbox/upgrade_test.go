package outbox

import (
	"database/sql"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
	"github.com/seckill/seckill/migrations"
)

// beforeReceivers is the last migration before delivery state was kept per
// receiver.
const beforeReceivers = 12

// oldSchema opens a database of dialect migrated up to beforeReceivers, as
// GORM and as the *sql.DB to migrate further.
func oldSchema(t *testing.T, dialect string) (*gorm.DB, *sql.DB) {
	t.Helper()
	var db *gorm.DB
	var gd goose.Dialect
	var err error
	switch dialect {
	case migrations.MySQL:
		gd = goose.DialectMySQL
		sqlDB, oerr := sql.Open("mysql", testsvc.MySQL(t))
		require.NoError(t, oerr)
		t.Cleanup(func() { _ = sqlDB.Close() })
		db, err = gorm.Open(gormmysql.New(gormmysql.Config{Conn: sqlDB}), &gorm.Config{Logger: logger.Discard})
	default:
		gd = goose.DialectSQLite3
		// As the embedded mode opens it.
		db, err = gorm.Open(sqlite.Open("file:"+t.TempDir()+"/seckill.db?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_time_format=sqlite"),
			&gorm.Config{Logger: logger.Discard})
	}
	require.NoError(t, err)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	if dialect == migrations.SQLite {
		sqlDB.SetMaxOpenConns(1)
		t.Cleanup(func() { _ = sqlDB.Close() })
	}
	p, err := goose.NewProvider(gd, sqlDB, os.DirFS("../../migrations/"+dialect))
	require.NoError(t, err)
	_, err = p.UpTo(t.Context(), beforeReceivers)
	require.NoError(t, err)
	return db, sqlDB
}

// The events in flight when per-receiver state comes (the migration runs
// between two releases) still reach every receiver: an event pending,
// retried or leased by a dispatcher of the old release goes to each
// receiver, in order per order, as does one still in a batch; a dead one
// is dead for each, listed with its attempts and last error; a delivered
// one is not sent again.
func TestUpgradeKeepsEventsInFlight(t *testing.T) {
	for _, dialect := range []string{migrations.MySQL, migrations.SQLite} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			db, sqlDB := oldSchema(t, dialect)
			clock := testutil.NewClock(t0)
			old := func(e Event, status string, attempts int, leased bool) {
				t.Helper()
				var owner *string
				var until *time.Time
				if leased {
					o, u := "old-release", t0.Add(time.Minute)
					owner, until = &o, &u
				}
				var delivered *time.Time
				if status == StatusDelivered {
					delivered = &e.CreatedAt
				}
				require.NoError(t, db.Exec(`INSERT INTO outbox (event_id, type, order_id, payload, status, attempts, created_at, window_from, next_at,
					lease_owner, lease_until, delivered_at, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
					e.EventID, e.Type, e.OrderID, e.Payload, status, attempts, e.CreatedAt, e.CreatedAt, e.CreatedAt.Add(time.Second),
					owner, until, delivered, "answered 503").Error)
			}
			aCreated, aPaid := event(t, OrderCreated, "A", t0), event(t, OrderPaid, "A", t0)
			bCreated, bPaid := event(t, OrderCreated, "B", t0), event(t, OrderPaid, "B", t0)
			cCreated, cPaid := event(t, OrderCreated, "C", t0), event(t, OrderPaid, "C", t0)
			old(aCreated, StatusPending, 3, false)
			old(aPaid, StatusPending, 0, false)
			old(bCreated, StatusDelivered, 1, false)
			old(bPaid, StatusDead, 9, false)
			old(cCreated, StatusPending, 0, true)
			b := newBatch([]Event{cPaid})
			require.NoError(t, db.Create(&b).Error)

			_, err := migrations.Up(t.Context(), sqlDB, dialect)
			require.NoError(t, err)

			shop, crm := newSink(), newSink()
			shop.name, crm.name = "shop", "crm"
			d := NewDispatcher(db, Options{Sinks: []Sink{shop, crm}, Now: clock.Now, Log: quiet})
			clock.Advance(2 * time.Minute) // past the old release's lease
			for range 3 {
				_, err := d.Step(t.Context())
				require.NoError(t, err)
			}
			want := []string{aCreated.EventID, aPaid.EventID, cCreated.EventID, cPaid.EventID}
			for _, s := range []*sink{shop, crm} {
				acked, _ := s.report()
				assert.ElementsMatch(t, want, acked, "%s: every event in flight, once", s.name)
				assert.Less(t, slices.Index(acked, aCreated.EventID), slices.Index(acked, aPaid.EventID), "%s: order A in order", s.name)
				assert.Less(t, slices.Index(acked, cCreated.EventID), slices.Index(acked, cPaid.EventID), "%s: order C in order", s.name)
				assert.Zero(t, s.sends(bCreated.EventID), "%s: a delivered event is not sent again", s.name)
				assert.Zero(t, s.sends(bPaid.EventID), "%s: a dead one waits for a redelivery by hand", s.name)
			}
			dead, _, err := List(t.Context(), db, StatusDead, "", 0, 10)
			require.NoError(t, err)
			require.Len(t, dead, 2)
			for _, v := range dead {
				assert.Equal(t, bPaid.EventID, v.EventID)
				assert.Equal(t, 9, v.Attempts)
				require.NotNil(t, v.LastError)
				assert.Equal(t, "answered 503", *v.LastError)
			}
			assert.ElementsMatch(t, []string{"shop", "crm"}, []string{dead[0].Receiver, dead[1].Receiver})
			assert.Equal(t, 3, deliveryOf(t, db, aCreated.EventID, "crm").Attempts, "its attempts are kept")

			vs, err := Redeliver(t.Context(), db, bPaid.EventID, "crm", clock.Now())
			require.NoError(t, err)
			require.Len(t, vs, 1)
			_, err = d.Step(t.Context())
			require.NoError(t, err)
			assert.Equal(t, 1, crm.sends(bPaid.EventID))
			assert.Zero(t, shop.sends(bPaid.EventID))
		})
	}
}
