-- +goose Up
-- A hidden SKU is on sale to whoever knows its id but left out of the
-- shop's list (GET /api/v1/skus): load tests seed theirs so.
ALTER TABLE skus ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE skus DROP COLUMN hidden;
