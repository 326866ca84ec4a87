-- +goose Up
-- Delivery state per receiver (docs/operate/runbook.md#events): each event is
-- delivered to each receiver on its own, so a receiver that refuses delays
-- only its own deliveries. outbox keeps the events; outbox_deliveries
-- keeps, per event and receiver, how its delivery goes; outbox_receivers
-- keeps, per receiver, how far its deliveries have been made.
--
-- outbox_receivers: name is the receiver's name (a webhook's given name,
-- or its URL's host and path; nats). next_id: the outbox id from which its
-- events have no delivery row yet (a dispatcher adds them in id order).
-- created_at: when a dispatcher first had it; seen_at: the last time one
-- did (a receiver no dispatcher has had for events.retention is dropped,
-- with its deliveries).
--
-- outbox_deliveries: event_row is the event's outbox id; status: pending
-- (to deliver), delivered, dead (refused or unreachable past
-- events.max_age; kept until redelivered by hand). attempts: failed
-- deliveries so far; next_at: the earliest next try; window_from: when the
-- current retry window began (the event's creation, or its last
-- redelivery by hand). lease_owner/lease_until: the dispatcher delivering
-- it now; another may take it once the lease ends.
--
-- outbox_deliveries_event: one delivery per event and receiver;
-- outbox_deliveries_due: a receiver's scan of due deliveries;
-- outbox_deliveries_order: a delivery waits for the pending deliveries of
-- its order to the same receiver written before it;
-- outbox_deliveries_status_id: the admin list; outbox_deliveries_delivered:
-- retention deletes delivered deliveries by age.
--
-- The events pending or dead before this migration were for every
-- receiver: they become the deliveries of receiver '*', which no
-- configuration can name, and each receiver a dispatcher first has in the
-- events.max_age after the first one gets a copy of them (a dispatcher
-- registers its receivers before it moves a batch, so they get the events
-- still in batches too). The next_id of '*' is where the events after this
-- migration begin. The state of a delivered event is dropped: it is
-- deleted events.retention after it was written.
CREATE TABLE outbox_receivers (
    name       VARCHAR(128)    NOT NULL,
    next_id    BIGINT UNSIGNED NOT NULL,
    created_at DATETIME(3)     NOT NULL,
    seen_at    DATETIME(3)     NOT NULL,
    PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE outbox_deliveries (
    id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    event_row    BIGINT UNSIGNED NOT NULL,
    receiver     VARCHAR(128)    NOT NULL,
    order_id     VARCHAR(64)     NOT NULL,
    status       VARCHAR(16)     NOT NULL,
    attempts     INT             NOT NULL DEFAULT 0,
    window_from  DATETIME(3)     NOT NULL,
    next_at      DATETIME(3)     NOT NULL,
    lease_owner  VARCHAR(64)     NULL,
    lease_until  DATETIME(3)     NULL,
    delivered_at DATETIME(3)     NULL,
    last_error   VARCHAR(255)    NULL,
    PRIMARY KEY (id),
    UNIQUE KEY outbox_deliveries_event (event_row, receiver),
    KEY outbox_deliveries_due (receiver, status, next_at),
    KEY outbox_deliveries_order (receiver, order_id, status, event_row),
    KEY outbox_deliveries_status_id (status, id),
    KEY outbox_deliveries_delivered (status, delivered_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

INSERT INTO outbox_receivers (name, next_id, created_at, seen_at)
SELECT '*', COALESCE(MAX(id), 0) + 1, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3) FROM outbox;

INSERT INTO outbox_deliveries (event_row, receiver, order_id, status, attempts, window_from, next_at, last_error)
SELECT id, '*', order_id, status, attempts, window_from, next_at, last_error
FROM outbox WHERE status IN ('pending', 'dead') ORDER BY id;

-- outbox_order_type: the audit's look-up of an order's event of a type;
-- outbox_created: retention deletes events by age. The indexes go first, in
-- a statement of their own: TiDB drops no column an index covers, even one
-- the same statement drops.
ALTER TABLE outbox
    DROP INDEX outbox_status_id,
    DROP INDEX outbox_order_id,
    DROP INDEX outbox_delivered;
ALTER TABLE outbox
    DROP COLUMN status,
    DROP COLUMN attempts,
    DROP COLUMN window_from,
    DROP COLUMN next_at,
    DROP COLUMN lease_owner,
    DROP COLUMN lease_until,
    DROP COLUMN delivered_at,
    DROP COLUMN last_error,
    ADD KEY outbox_order_type (order_id, type),
    ADD KEY outbox_created (created_at);

-- +goose Down
-- An event is pending again while any receiver's delivery of it is (or a
-- receiver has yet to get it), else dead while any is dead, else
-- delivered.
ALTER TABLE outbox
    DROP INDEX outbox_order_type,
    DROP INDEX outbox_created,
    ADD COLUMN status       VARCHAR(16)  NOT NULL DEFAULT 'delivered',
    ADD COLUMN attempts     INT          NOT NULL DEFAULT 0,
    ADD COLUMN window_from  DATETIME(3)  NULL,
    ADD COLUMN next_at      DATETIME(3)  NULL,
    ADD COLUMN lease_owner  VARCHAR(64)  NULL,
    ADD COLUMN lease_until  DATETIME(3)  NULL,
    ADD COLUMN delivered_at DATETIME(3)  NULL,
    ADD COLUMN last_error   VARCHAR(255) NULL;
UPDATE outbox SET window_from = created_at, next_at = created_at, delivered_at = created_at;
UPDATE outbox o SET o.status = 'dead', o.delivered_at = NULL
WHERE EXISTS (SELECT 1 FROM outbox_deliveries d WHERE d.event_row = o.id AND d.status = 'dead');
UPDATE outbox o SET o.status = 'pending', o.delivered_at = NULL
WHERE EXISTS (SELECT 1 FROM outbox_deliveries d WHERE d.event_row = o.id AND d.status = 'pending')
   OR o.id >= COALESCE((SELECT MIN(r.next_id) FROM outbox_receivers r WHERE r.name <> '*'),
                       (SELECT r.next_id FROM outbox_receivers r WHERE r.name = '*'), ~0);
ALTER TABLE outbox
    MODIFY COLUMN window_from DATETIME(3) NOT NULL,
    MODIFY COLUMN next_at     DATETIME(3) NOT NULL,
    ADD KEY outbox_status_id (status, id),
    ADD KEY outbox_order_id (order_id, status, id),
    ADD KEY outbox_delivered (status, delivered_at);
DROP TABLE outbox_deliveries;
DROP TABLE outbox_receivers;
