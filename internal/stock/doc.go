// Package stock is the Redis side of a sale: for every SKU, the units left,
// what each shopper bought, the request ids already answered, and the SKU's
// order queue — all under the SKU's hash tag {sku:N}, so one Lua script can
// check and change them together, on standalone Redis and on one Redis
// Cluster slot alike.
//
// A buy is one script (lua/buy.lua): for each request of a batch it checks the
// request id, the units left and the shopper's limit, takes the units and
// enqueues the order task (internal/queue's enqueue library is prepended to
// the script), so no crash can leave stock taken without its order or an
// order without its stock. Under StrategyLock the script runs while the
// caller holds the SKU's lock (package lock) and refuses to write when that
// lock is no longer held with the caller's token or its fencing number is
// older than one already used.
//
// Seller is the buy path in front of the script: a per-process sold-out flag
// answers without Redis once a SKU is gone (cleared on every instance by a
// pub/sub message when units come back), and concurrent requests for one SKU
// are combined into one lock acquisition and one script call (group commit).
//
// Returning the units of a closed order (lua/return.lua) happens once per
// order however often it is asked; Rebuild replaces a SKU's state with one
// computed from SQL after Redis lost it.
//
// A SKU's stock may be split into buckets (Part), each with its own hash
// tag, so one hot SKU's scripts run on several Cluster shards. A shopper
// buys from their home bucket (Home), where their limit, request ids and
// rate budget are kept; a bucket that runs short borrows units from the
// others in two steps (lua/lend.lua, lua/receive.lua) that can leave units
// in flight, never in two buckets at once. docs/design/buckets.md has the proof
// sketch.
package stock
