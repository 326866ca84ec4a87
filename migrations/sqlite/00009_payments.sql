-- +goose Up
-- Payment notifications: the same table as
-- migrations/mysql/00009_payments.sql, which says why.
CREATE TABLE payments (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    payment_id   TEXT    NOT NULL UNIQUE,
    webhook_id   TEXT    NOT NULL UNIQUE,
    order_id     TEXT    NOT NULL,
    amount_cents INTEGER NOT NULL,
    currency     TEXT    NOT NULL,
    status       TEXT    NOT NULL,
    reason       TEXT    NOT NULL,
    received_at  DATETIME NOT NULL
);
CREATE INDEX payments_order ON payments (order_id);
CREATE INDEX payments_status_id ON payments (status, id);

-- +goose Down
DROP TABLE payments;
