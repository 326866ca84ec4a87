-- +goose Up
-- orders_user (user_id, sku_id) repeated the head of orders_user_created
-- (user_id, created_at, order_id): every query by shopper finds its rows
-- through that one (a shopper has few orders), and each index is paid on
-- every insert of the drain.
DROP INDEX orders_user ON orders;

-- +goose Down
CREATE INDEX orders_user ON orders (user_id, sku_id);
