-- +goose Up
-- Payment references, the provider's payment and refunds: the same columns
-- and index as migrations/mysql/00014_payment_reference.sql, which says
-- why.
ALTER TABLE orders ADD COLUMN payment_reference TEXT NULL;
ALTER TABLE orders ADD COLUMN payment_intent TEXT NULL;
ALTER TABLE orders ADD COLUMN refund_id TEXT NULL;
ALTER TABLE orders ADD COLUMN refund_error TEXT NULL;
CREATE UNIQUE INDEX orders_payment_reference ON orders (payment_reference);

-- +goose Down
DROP INDEX orders_payment_reference;
ALTER TABLE orders DROP COLUMN refund_error;
ALTER TABLE orders DROP COLUMN refund_id;
ALTER TABLE orders DROP COLUMN payment_intent;
ALTER TABLE orders DROP COLUMN payment_reference;
