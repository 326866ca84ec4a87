-- +goose Up
-- Support staff find orders and cancel them by hand: the same columns and
-- indexes as migrations/mysql/00005_orders_support.sql, which says why.
ALTER TABLE orders ADD COLUMN cancel_reason TEXT NULL;
ALTER TABLE orders ADD COLUMN refund TEXT NULL;
CREATE INDEX orders_status_created ON orders (status, created_at, order_id);
CREATE INDEX orders_sku_status_created ON orders (sku_id, status, created_at, order_id);
DROP INDEX orders_sku_status;

-- +goose Down
CREATE INDEX orders_sku_status ON orders (sku_id, status);
DROP INDEX orders_sku_status_created;
DROP INDEX orders_status_created;
ALTER TABLE orders DROP COLUMN refund;
ALTER TABLE orders DROP COLUMN cancel_reason;
