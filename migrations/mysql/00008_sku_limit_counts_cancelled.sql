-- +goose Up
-- limit_counts_cancelled: whether a SKU's per-user limit counts the units of
-- the shopper's cancelled and expired orders too. TRUE (the default for a
-- new SKU): N per shopper means N ever taken, so a shopper who cancels
-- cannot buy again past the limit. FALSE: only what the shopper holds
-- counts, and a cancel or an expiry gives their count back. An order an
-- operator voids (its dead letter deleted) gives the count back either way.
--
-- The SKUs that exist were sold under the second reading (their Redis state
-- has no flag, which reads as FALSE), so they keep it: the column is added
-- as FALSE for them, and only then defaults to TRUE for the rows to come.
ALTER TABLE skus ADD COLUMN limit_counts_cancelled BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE skus ALTER COLUMN limit_counts_cancelled SET DEFAULT TRUE;

-- +goose Down
ALTER TABLE skus DROP COLUMN limit_counts_cancelled;
