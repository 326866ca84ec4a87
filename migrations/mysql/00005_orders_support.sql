-- +goose Up
-- Support staff find orders and cancel them by hand (GET /admin/orders,
-- POST /admin/orders/{order_id}/cancel); one statement, so a failure leaves
-- the table as it was.
--
-- cancel_reason: why staff cancelled the order; NULL for every other order,
-- a shopper's cancel included. refund: 'due' when staff cancelled the order
-- after it was paid (the shop owes the shopper its price), NULL otherwise.
-- Both are written with the status, in the cancel's transaction; the drain's
-- inserts leave them out.
--
-- The list is newest first (created_at, order_id), and each filter reads an
-- index in that order, a page at a time:
--   user_id (with any other filter)  orders_user_created (00002)
--   sku_id, with or without status   orders_sku_status_created, one range
--                                    per status, merged
--   status alone, or no filter       orders_status_created, likewise
-- orders_sku_status_created begins with (sku_id, status), so it replaces
-- orders_sku_status for the audit and the rebuild: one index more in all
-- on every insert of the drain.
ALTER TABLE orders
    ADD COLUMN cancel_reason VARCHAR(500) NULL,
    ADD COLUMN refund        VARCHAR(16)  NULL,
    ADD INDEX orders_status_created (status, created_at, order_id),
    ADD INDEX orders_sku_status_created (sku_id, status, created_at, order_id),
    DROP INDEX orders_sku_status;

-- +goose Down
ALTER TABLE orders
    ADD INDEX orders_sku_status (sku_id, status),
    DROP INDEX orders_sku_status_created,
    DROP INDEX orders_status_created,
    DROP COLUMN refund,
    DROP COLUMN cancel_reason;
