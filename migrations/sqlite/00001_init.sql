-- +goose Up
-- The embedded mode's schema: the same tables and columns as migrations/mysql.
CREATE TABLE skus (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    name           TEXT    NOT NULL,
    price_cents    INTEGER NOT NULL CHECK (price_cents >= 0),
    stock_total    INTEGER NOT NULL,
    sold           INTEGER NOT NULL DEFAULT 0,
    per_user_limit INTEGER NOT NULL DEFAULT 1,
    starts_at      DATETIME NOT NULL,
    ends_at        DATETIME NOT NULL,
    created_at     DATETIME NOT NULL,
    updated_at     DATETIME NOT NULL,
    CHECK (sold >= 0 AND sold <= stock_total)
);
CREATE INDEX skus_window ON skus (ends_at, starts_at);

CREATE TABLE orders (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    order_id     TEXT    NOT NULL UNIQUE,
    sku_id       INTEGER NOT NULL,
    user_id      TEXT    NOT NULL,
    request_id   TEXT    NULL,
    qty          INTEGER NOT NULL CHECK (qty > 0),
    price_cents  INTEGER NOT NULL,
    status       TEXT    NOT NULL,
    fence        INTEGER NOT NULL DEFAULT 0,
    created_at   DATETIME NOT NULL,
    persisted_at DATETIME NOT NULL,
    expires_at   DATETIME NOT NULL,
    paid_at      DATETIME NULL,
    closed_at    DATETIME NULL,
    updated_at   DATETIME NOT NULL
);
CREATE INDEX orders_sku_status ON orders (sku_id, status);
CREATE INDEX orders_user ON orders (user_id, sku_id);

-- +goose Down
DROP TABLE orders;
DROP TABLE skus;
