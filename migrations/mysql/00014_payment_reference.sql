-- +goose Up
-- What a payment provider knows an order by, and what seckill asks a
-- provider to do for it. The index in a statement of its own: TiDB indexes
-- no column the same statement adds.
--
-- payment_reference: the order's payment reference, 32 letters and digits
-- that every provider accepts as its order number (Stripe's metadata,
-- Alipay's and WeChat Pay's out_trade_no). It is the order id written in
-- base 62 (internal/orderid), so distinct orders have distinct references
-- and seckill reads the order id back from one without this column; the
-- drain writes it with every order from this version on, so that SQL alone
-- finds an order by it too (00015 drops the index: no query of seckill
-- needs it). Orders written before have NULL here (a unique key holds any
-- number of NULLs); their reference is the same function of their order
-- id.
--
-- payment_intent: the provider's payment opened for the order by the
-- checkout (payment.mode stripe: its PaymentIntent), which the order's
-- expiry or cancel cancels; NULL until a checkout opens one.
--
-- refund is now 'due' (staff cancelled the order after it was paid) or
-- 'issued' (the provider refunded it: refund_id is its refund);
-- refund_error says why the provider refused a refund that stays 'due'.
ALTER TABLE orders
    ADD COLUMN payment_reference VARCHAR(32)  NULL,
    ADD COLUMN payment_intent    VARCHAR(255) NULL,
    ADD COLUMN refund_id         VARCHAR(255) NULL,
    ADD COLUMN refund_error      VARCHAR(500) NULL;
ALTER TABLE orders ADD UNIQUE INDEX orders_payment_reference (payment_reference);

-- +goose Down
ALTER TABLE orders DROP INDEX orders_payment_reference;
ALTER TABLE orders
    DROP COLUMN refund_error,
    DROP COLUMN refund_id,
    DROP COLUMN payment_intent,
    DROP COLUMN payment_reference;
