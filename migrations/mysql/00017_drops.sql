-- +goose Up
-- drops: one product sold as several SKUs (its sizes) through one waiting
-- room (docs/shop/drops.md). A drop's id is the id of its first SKU, whose
-- row keeps the room's settings and seed; per_user_limit: the units one
-- shopper may buy over all the drop's SKUs. skus.drop_id: the drop a SKU
-- belongs to, 0 for none; it never changes once set. The column and its
-- index are two statements: TiDB indexes no column added by the same one.
CREATE TABLE drops (
    id             BIGINT UNSIGNED NOT NULL,
    name           VARCHAR(200)    NOT NULL,
    per_user_limit INT             NOT NULL,
    created_at     DATETIME(3)     NOT NULL,
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

ALTER TABLE skus ADD COLUMN drop_id BIGINT UNSIGNED NOT NULL DEFAULT 0;
ALTER TABLE skus ADD KEY skus_drop (drop_id);

-- +goose Down
ALTER TABLE skus DROP KEY skus_drop;
ALTER TABLE skus DROP COLUMN drop_id;
DROP TABLE drops;
