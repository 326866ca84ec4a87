-- +goose Up
-- Payment notifications from the payment side (POST /webhooks/payments),
-- each recorded once with what it did, in the transaction of the order's
-- change it caused.
--
-- payment_id: the payment side's id of the payment; webhook_id: the
-- notification's webhook-id header. Either seen again is a replay: it is
-- answered as recorded and changes nothing. status: applied (the order
-- became paid), refund_due (the money came for an order that could not take
-- it: closed, already paid by another payment, or past its deadline; the
-- shop owes it back) or mismatch (the amount or currency is not the
-- order's; the order is unchanged). reason says which.
--
-- GET /admin/payments lists them by status, newest first, a page at a time
-- (payments_status_id).
CREATE TABLE payments (
    id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    payment_id   VARCHAR(128)    NOT NULL,
    webhook_id   VARCHAR(128)    NOT NULL,
    order_id     VARCHAR(64)     NOT NULL,
    amount_cents BIGINT          NOT NULL,
    currency     VARCHAR(3)      NOT NULL,
    status       VARCHAR(16)     NOT NULL,
    reason       VARCHAR(32)     NOT NULL,
    received_at  DATETIME(3)     NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY payments_payment_id (payment_id),
    UNIQUE KEY payments_webhook_id (webhook_id),
    KEY payments_order (order_id),
    KEY payments_status_id (status, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- +goose Down
DROP TABLE payments;
