-- +goose Up
-- A shopper's order list, newest first (GET /api/v1/orders).
CREATE INDEX orders_user_created ON orders (user_id, created_at, order_id);

-- +goose Down
DROP INDEX orders_user_created ON orders;
