-- +goose Up
-- Delivery state per receiver: the same tables as
-- migrations/mysql/00013_outbox_deliveries.sql, which says why, and the
-- same move of the events pending or dead before it.
CREATE TABLE outbox_receivers (
    name       TEXT     NOT NULL PRIMARY KEY,
    next_id    INTEGER  NOT NULL,
    created_at DATETIME NOT NULL,
    seen_at    DATETIME NOT NULL
);

CREATE TABLE outbox_deliveries (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    event_row    INTEGER  NOT NULL,
    receiver     TEXT     NOT NULL,
    order_id     TEXT     NOT NULL,
    status       TEXT     NOT NULL,
    attempts     INTEGER  NOT NULL DEFAULT 0,
    window_from  DATETIME NOT NULL,
    next_at      DATETIME NOT NULL,
    lease_owner  TEXT     NULL,
    lease_until  DATETIME NULL,
    delivered_at DATETIME NULL,
    last_error   TEXT     NULL
);
CREATE UNIQUE INDEX outbox_deliveries_event ON outbox_deliveries (event_row, receiver);
CREATE INDEX outbox_deliveries_due ON outbox_deliveries (receiver, status, next_at);
CREATE INDEX outbox_deliveries_order ON outbox_deliveries (receiver, order_id, status, event_row);
CREATE INDEX outbox_deliveries_status_id ON outbox_deliveries (status, id);
CREATE INDEX outbox_deliveries_delivered ON outbox_deliveries (status, delivered_at);

INSERT INTO outbox_receivers (name, next_id, created_at, seen_at)
SELECT '*', COALESCE(MAX(id), 0) + 1, strftime('%Y-%m-%d %H:%M:%f', 'now'), strftime('%Y-%m-%d %H:%M:%f', 'now') FROM outbox;

INSERT INTO outbox_deliveries (event_row, receiver, order_id, status, attempts, window_from, next_at, last_error)
SELECT id, '*', order_id, status, attempts, window_from, next_at, last_error
FROM outbox WHERE status IN ('pending', 'dead') ORDER BY id;

DROP INDEX outbox_status_id;
DROP INDEX outbox_order_id;
DROP INDEX outbox_delivered;
ALTER TABLE outbox DROP COLUMN status;
ALTER TABLE outbox DROP COLUMN attempts;
ALTER TABLE outbox DROP COLUMN window_from;
ALTER TABLE outbox DROP COLUMN next_at;
ALTER TABLE outbox DROP COLUMN lease_owner;
ALTER TABLE outbox DROP COLUMN lease_until;
ALTER TABLE outbox DROP COLUMN delivered_at;
ALTER TABLE outbox DROP COLUMN last_error;
CREATE INDEX outbox_order_type ON outbox (order_id, type);
CREATE INDEX outbox_created ON outbox (created_at);

-- +goose Down
-- As migrations/mysql/00013_outbox_deliveries.sql goes down.
DROP INDEX outbox_order_type;
DROP INDEX outbox_created;
ALTER TABLE outbox ADD COLUMN status TEXT NOT NULL DEFAULT 'delivered';
ALTER TABLE outbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox ADD COLUMN window_from DATETIME NULL;
ALTER TABLE outbox ADD COLUMN next_at DATETIME NULL;
ALTER TABLE outbox ADD COLUMN lease_owner TEXT NULL;
ALTER TABLE outbox ADD COLUMN lease_until DATETIME NULL;
ALTER TABLE outbox ADD COLUMN delivered_at DATETIME NULL;
ALTER TABLE outbox ADD COLUMN last_error TEXT NULL;
UPDATE outbox SET window_from = created_at, next_at = created_at, delivered_at = created_at;
UPDATE outbox SET status = 'dead', delivered_at = NULL
WHERE EXISTS (SELECT 1 FROM outbox_deliveries d WHERE d.event_row = outbox.id AND d.status = 'dead');
UPDATE outbox SET status = 'pending', delivered_at = NULL
WHERE EXISTS (SELECT 1 FROM outbox_deliveries d WHERE d.event_row = outbox.id AND d.status = 'pending')
   OR outbox.id >= COALESCE((SELECT MIN(r.next_id) FROM outbox_receivers r WHERE r.name <> '*'),
                            (SELECT r.next_id FROM outbox_receivers r WHERE r.name = '*'), 9223372036854775807);
CREATE INDEX outbox_status_id ON outbox (status, id);
CREATE INDEX outbox_order_id ON outbox (order_id, status, id);
CREATE INDEX outbox_delivered ON outbox (status, delivered_at);
DROP TABLE outbox_deliveries;
DROP TABLE outbox_receivers;
