-- +goose Up
-- No query of seckill reads orders by payment_reference: a reference is
-- read back into its order id (internal/orderid), and the order found by
-- orders_order_id. The unique index cost every insert of the drain a few
-- microseconds of the database; the column stays, written with every
-- order, for those who read the table.
DROP INDEX orders_payment_reference ON orders;

-- +goose Down
CREATE UNIQUE INDEX orders_payment_reference ON orders (payment_reference);
