-- +goose Up
-- The same column as migrations/mysql/00016_sku_room_pow.sql, which says
-- what it holds.
ALTER TABLE skus ADD COLUMN room_pow_bits INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE skus DROP COLUMN room_pow_bits;
