package migrations_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/migrations"
)

// The move to delivery state per receiver keeps the events in flight: a
// pending or dead event becomes a delivery of receiver '*' (every
// receiver's) with its attempts and last error, a delivered one none; the
// next receivers start after the last event. Down, an event is pending
// again while a receiver's delivery of it is, dead while one is dead, and
// delivered otherwise; up again works.
func TestOutboxDeliveriesKeepEventsInFlight(t *testing.T) {
	for _, tc := range dialects {
		t.Run(tc.dialect, func(t *testing.T) {
			ctx := t.Context()
			db, p := tc.at(t, 12)
			for _, e := range []struct {
				id, status string
				attempts   int
			}{{"evt_created_a", "pending", 3}, {"evt_created_b", "delivered", 1}, {"evt_paid_b", "dead", 9}, {"evt_created_c", "pending", 0}} {
				_, err := db.ExecContext(ctx, `INSERT INTO outbox (event_id, type, order_id, payload, status, attempts, created_at, window_from, next_at, last_error)
					VALUES (?, 'order.created', ?, '{}', ?, ?, '2026-11-11 00:00:00', '2026-11-11 00:00:00', '2026-11-11 00:00:01', 'answered 503')`,
					e.id, e.id[len(e.id)-1:], e.status, e.attempts)
				require.NoError(t, err)
			}

			_, err := migrations.Up(ctx, db, tc.dialect)
			require.NoError(t, err)
			rows, err := db.QueryContext(ctx, `SELECT e.event_id, d.receiver, d.status, d.attempts, d.last_error
				FROM outbox_deliveries d JOIN outbox e ON e.id = d.event_row ORDER BY e.id`)
			require.NoError(t, err)
			var got []string
			for rows.Next() {
				var id, receiver, status, lastError string
				var attempts int
				require.NoError(t, rows.Scan(&id, &receiver, &status, &attempts, &lastError))
				got = append(got, fmt.Sprintf("%s %s %s %s %d", id, receiver, status, lastError, attempts))
			}
			require.NoError(t, rows.Err())
			assert.Equal(t, []string{
				"evt_created_a * pending answered 503 3",
				"evt_paid_b * dead answered 503 9",
				"evt_created_c * pending answered 503 0",
			}, got)
			var next int
			require.NoError(t, db.QueryRowContext(ctx, `SELECT next_id FROM outbox_receivers WHERE name = '*'`).Scan(&next))
			assert.Equal(t, 5, next, "the receivers to come start after the last event")
			_, err = db.ExecContext(ctx, `SELECT status FROM outbox`)
			require.Error(t, err, "the event has no status of its own")

			// A receiver got a, refused c past its window, and is yet to be
			// given a new event d.
			_, err = db.ExecContext(ctx, `INSERT INTO outbox_receivers (name, next_id, created_at, seen_at)
				VALUES ('shop', 5, '2026-11-11 00:00:00', '2026-11-11 00:00:00')`)
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, `INSERT INTO outbox_deliveries (event_row, receiver, order_id, status, attempts, window_from, next_at)
				VALUES (1, 'shop', 'a', 'delivered', 0, '2026-11-11 00:00:00', '2026-11-11 00:00:00'),
				       (4, 'shop', 'c', 'dead', 5, '2026-11-11 00:00:00', '2026-11-11 00:00:00')`)
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, `DELETE FROM outbox_deliveries WHERE receiver = '*' AND order_id IN ('a', 'c')`)
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, `INSERT INTO outbox (event_id, type, order_id, payload, created_at)
				VALUES ('evt_created_d', 'order.created', 'd', '{}', '2026-11-11 00:00:02')`)
			require.NoError(t, err)

			_, err = p.DownTo(ctx, 12)
			require.NoError(t, err)
			status := map[string]string{}
			rows, err = db.QueryContext(ctx, `SELECT event_id, status FROM outbox`)
			require.NoError(t, err)
			for rows.Next() {
				var id, s string
				require.NoError(t, rows.Scan(&id, &s))
				status[id] = s
			}
			require.NoError(t, rows.Err())
			assert.Equal(t, map[string]string{"evt_created_a": "delivered", "evt_created_b": "delivered", "evt_paid_b": "dead",
				"evt_created_c": "dead", "evt_created_d": "pending"}, status)

			_, err = migrations.Up(ctx, db, tc.dialect)
			require.NoError(t, err)
		})
	}
}
