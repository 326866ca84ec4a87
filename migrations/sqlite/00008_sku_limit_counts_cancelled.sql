-- +goose Up
-- Whether a SKU's per-user limit counts the units of the shopper's cancelled
-- and expired orders too: the same column as
-- migrations/mysql/00006_sku_limit_counts_cancelled.sql, which says why the
-- SKUs that exist keep FALSE. One transaction: SQLite's ALTER TABLE cannot
-- change a column's default, so the rows that exist are set after.
ALTER TABLE skus ADD COLUMN limit_counts_cancelled INTEGER NOT NULL DEFAULT 1;
UPDATE skus SET limit_counts_cancelled = 0;

-- +goose Down
ALTER TABLE skus DROP COLUMN limit_counts_cancelled;
