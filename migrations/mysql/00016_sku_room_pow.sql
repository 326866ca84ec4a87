-- +goose Up
-- room_pow_bits: the leading zero bits of the proof of work a shopper's
-- first join of the SKU's waiting room needs (docs/shop/waiting-room.md);
-- 0, every existing room: none.
ALTER TABLE skus ADD COLUMN room_pow_bits INT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE skus DROP COLUMN room_pow_bits;
