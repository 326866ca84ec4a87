-- +goose Up
-- The events of one transaction, as one row: the same table as
-- migrations/mysql/00011_outbox_batches.sql, which says why.
CREATE TABLE outbox_batches (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    n          INTEGER  NOT NULL,
    created_at DATETIME NOT NULL,
    events     BLOB     NOT NULL
);

-- +goose Down
DROP TABLE outbox_batches;
