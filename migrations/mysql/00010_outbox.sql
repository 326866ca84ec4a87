-- +goose Up
-- Order events for the shop (docs/shop/payments-and-events.md#order-events): each written in
-- the transaction of the order's change that causes it, and delivered from
-- here to the configured receivers, at least once, in order per order.
--
-- event_id: the event's id (evt_<kind>_<order id>, evt_refund_<hash of the
-- payment id>), the same on every delivery. type: order.created,
-- order.paid, order.cancelled, order.expired, order.failed,
-- payment.refund_due. payload: the event as delivered (JSON).
-- status: pending (to deliver), delivered, dead (refused or unreachable
-- past events.max_age; kept until redelivered by hand). attempts: failed
-- deliveries so far; next_at: the earliest next try; window_from: when the
-- current retry window began (the event's creation, or its last
-- redelivery by hand). lease_owner/lease_until: the dispatcher delivering
-- it now; another may take it once the lease ends.
--
-- outbox_status_id: the dispatcher's scan of pending events and the admin
-- list; outbox_order_id: an event waits for the pending events of its
-- order written before it; outbox_delivered: retention deletes delivered
-- events by age.
-- On TiDB (the comment below is TiDB's, which MySQL skips) the ids come
-- from one allocator in the order they are asked for, as on MySQL, not from
-- ranges cached per TiDB server: the dispatcher relies on that order.
CREATE TABLE outbox (
    id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    event_id     VARCHAR(128)    NOT NULL,
    type         VARCHAR(32)     NOT NULL,
    order_id     VARCHAR(64)     NOT NULL,
    payload      MEDIUMTEXT      NOT NULL,
    status       VARCHAR(16)     NOT NULL,
    attempts     INT             NOT NULL DEFAULT 0,
    created_at   DATETIME(3)     NOT NULL,
    window_from  DATETIME(3)     NOT NULL,
    next_at      DATETIME(3)     NOT NULL,
    lease_owner  VARCHAR(64)     NULL,
    lease_until  DATETIME(3)     NULL,
    delivered_at DATETIME(3)     NULL,
    last_error   VARCHAR(255)    NULL,
    PRIMARY KEY (id),
    UNIQUE KEY outbox_event_id (event_id),
    KEY outbox_status_id (status, id),
    KEY outbox_order_id (order_id, status, id),
    KEY outbox_delivered (status, delivered_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
    /*T![auto_id_cache] AUTO_ID_CACHE = 1 */;

-- +goose Down
DROP TABLE outbox;
