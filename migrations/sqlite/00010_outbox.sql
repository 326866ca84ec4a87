-- +goose Up
-- Order events for the shop: the same table as
-- migrations/mysql/00010_outbox.sql, which says why.
CREATE TABLE outbox (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id     TEXT    NOT NULL UNIQUE,
    type         TEXT    NOT NULL,
    order_id     TEXT    NOT NULL,
    payload      TEXT    NOT NULL,
    status       TEXT    NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    created_at   DATETIME NOT NULL,
    window_from  DATETIME NOT NULL,
    next_at      DATETIME NOT NULL,
    lease_owner  TEXT    NULL,
    lease_until  DATETIME NULL,
    delivered_at DATETIME NULL,
    last_error   TEXT    NULL
);
CREATE INDEX outbox_status_id ON outbox (status, id);
CREATE INDEX outbox_order_id ON outbox (order_id, status, id);
CREATE INDEX outbox_delivered ON outbox (status, delivered_at);

-- +goose Down
DROP TABLE outbox;
