-- +goose Up
-- A SKU's waiting room (docs/shop/waiting-room.md), NULL room_opens_at for a
-- SKU without one. room_opens_at: shoppers may join from then; those who
-- join before starts_at are drawn at starts_at. room_mode: random (the
-- pre-queue is shuffled with room_seed) or fifo. room_admit_per_second:
-- tickets admitted per second (0: the configured default).
-- room_pass_ttl_ms: how long a pass is valid. room_overbook: valid unused
-- passes stay at most units left times this. room_seed: the draw's seed
-- (64 hex characters), kept secret until starts_at; its SHA-256 is
-- published from room_opens_at.
ALTER TABLE skus
    ADD COLUMN room_opens_at         DATETIME(3) NULL,
    ADD COLUMN room_mode             VARCHAR(8)  NOT NULL DEFAULT '',
    ADD COLUMN room_admit_per_second INT         NOT NULL DEFAULT 0,
    ADD COLUMN room_pass_ttl_ms      BIGINT      NOT NULL DEFAULT 0,
    ADD COLUMN room_overbook         DOUBLE      NOT NULL DEFAULT 0,
    ADD COLUMN room_seed             VARCHAR(64) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE skus
    DROP COLUMN room_opens_at,
    DROP COLUMN room_mode,
    DROP COLUMN room_admit_per_second,
    DROP COLUMN room_pass_ttl_ms,
    DROP COLUMN room_overbook,
    DROP COLUMN room_seed;
