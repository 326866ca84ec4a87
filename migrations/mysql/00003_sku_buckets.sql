-- +goose Up
-- A SKU's stock buckets: how many hash tags its Redis stock is split over,
-- fixed when the SKU is created. Existing SKUs keep their stock under one.
ALTER TABLE skus ADD COLUMN buckets INT NOT NULL DEFAULT 1;

-- +goose Down
ALTER TABLE skus DROP COLUMN buckets;
