-- +goose Up
-- skus: one row per sale item. sold counts units persisted by the order
-- workers; the CHECK and the guarded UPDATE in the workers keep it within
-- stock_total even if Redis loses state.
CREATE TABLE skus (
    id             BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    name           VARCHAR(200)    NOT NULL,
    price_cents    BIGINT          NOT NULL,
    stock_total    BIGINT          NOT NULL,
    sold           BIGINT          NOT NULL DEFAULT 0,
    per_user_limit INT             NOT NULL DEFAULT 1,
    starts_at      DATETIME(3)     NOT NULL,
    ends_at        DATETIME(3)     NOT NULL,
    created_at     DATETIME(3)     NOT NULL,
    updated_at     DATETIME(3)     NOT NULL,
    PRIMARY KEY (id),
    KEY skus_window (ends_at, starts_at),
    CONSTRAINT skus_sold_within_stock CHECK (sold >= 0 AND sold <= stock_total),
    CONSTRAINT skus_price_positive CHECK (price_cents >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- orders: one row per accepted order, written once by the drain (order_id is
-- unique, so a redelivered task is a no-op). status: pending_payment, paid,
-- cancelled, expired, failed (refused by the stock guard).
CREATE TABLE orders (
    id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    order_id     VARCHAR(64)     NOT NULL,
    sku_id       BIGINT UNSIGNED NOT NULL,
    user_id      VARCHAR(64)     NOT NULL,
    request_id   VARCHAR(64)     NULL,
    qty          INT             NOT NULL,
    price_cents  BIGINT          NOT NULL,
    status       VARCHAR(20)     NOT NULL,
    fence        BIGINT          NOT NULL DEFAULT 0,
    created_at   DATETIME(3)     NOT NULL,
    persisted_at DATETIME(3)     NOT NULL,
    expires_at   DATETIME(3)     NOT NULL,
    paid_at      DATETIME(3)     NULL,
    closed_at    DATETIME(3)     NULL,
    updated_at   DATETIME(3)     NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY orders_order_id (order_id),
    KEY orders_sku_status (sku_id, status),
    KEY orders_user (user_id, sku_id),
    CONSTRAINT orders_qty_positive CHECK (qty > 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- +goose Down
DROP TABLE orders;
DROP TABLE skus;
