-- +goose Up
-- The events of one transaction, as one row: a change of many orders (the
-- drain's insert of a batch) writes one row here instead of one outbox row
-- per event, and a dispatcher moves them into outbox rows (deleting the
-- batch) in id order. n: how many events; created_at: the oldest one's
-- creation; events: a JSON array of {id, type, order, at, payload},
-- compressed with zstd.
CREATE TABLE outbox_batches (
    id         BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    n          INT             NOT NULL,
    created_at DATETIME(3)     NOT NULL,
    events     LONGBLOB        NOT NULL,
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- +goose Down
DROP TABLE outbox_batches;
