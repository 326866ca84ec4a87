-- +goose Up
-- The same table and column as migrations/mysql/00017_drops.sql, which says
-- what they hold.
CREATE TABLE drops (
    id             INTEGER NOT NULL PRIMARY KEY,
    name           TEXT    NOT NULL,
    per_user_limit INTEGER NOT NULL,
    created_at     DATETIME NOT NULL
);
ALTER TABLE skus ADD COLUMN drop_id INTEGER NOT NULL DEFAULT 0;
CREATE INDEX skus_drop ON skus (drop_id);

-- +goose Down
DROP INDEX skus_drop;
ALTER TABLE skus DROP COLUMN drop_id;
DROP TABLE drops;
