-- +goose Up
-- A SKU's waiting room: the same columns as
-- migrations/mysql/00012_sku_waiting_room.sql, which says what they hold.
ALTER TABLE skus ADD COLUMN room_opens_at DATETIME NULL;
ALTER TABLE skus ADD COLUMN room_mode TEXT NOT NULL DEFAULT '';
ALTER TABLE skus ADD COLUMN room_admit_per_second INTEGER NOT NULL DEFAULT 0;
ALTER TABLE skus ADD COLUMN room_pass_ttl_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE skus ADD COLUMN room_overbook REAL NOT NULL DEFAULT 0;
ALTER TABLE skus ADD COLUMN room_seed TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE skus DROP COLUMN room_opens_at;
ALTER TABLE skus DROP COLUMN room_mode;
ALTER TABLE skus DROP COLUMN room_admit_per_second;
ALTER TABLE skus DROP COLUMN room_pass_ttl_ms;
ALTER TABLE skus DROP COLUMN room_overbook;
ALTER TABLE skus DROP COLUMN room_seed;
