-- +goose Up
-- As migrations/mysql/00015_drop_orders_payment_reference.sql, which says
-- why.
DROP INDEX orders_payment_reference;

-- +goose Down
CREATE UNIQUE INDEX orders_payment_reference ON orders (payment_reference);
