-- +goose Up
-- The events of one transaction, as one row: a change of many orders (the
-- drain's insert of a batch) writes one row here instead of one outbox row
-- per event, and a dispatcher moves them into outbox rows (deleting the
-- batch) in id order. n: how many events; created_at: the oldest one's
-- creation; events: a JSON array of {id, type, order, at, payload},
-- compressed with zstd.
-- On TiDB (the comment below is TiDB's, which MySQL skips) the ids come
-- from one allocator in the order they are asked for, as on MySQL, not from
-- ranges cached per TiDB server: the dispatcher relies on that order.
CREATE TABLE outbox_batches (
    id         BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    n          INT             NOT NULL,
    created_at DATETIME(3)     NOT NULL,
    events     LONGBLOB        NOT NULL,
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
    /*T![auto_id_cache] AUTO_ID_CACHE = 1 */;

-- +goose Down
DROP TABLE outbox_batches;
