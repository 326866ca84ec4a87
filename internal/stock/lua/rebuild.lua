-- rebuild.lua: replaces a SKU's Redis state with values computed from SQL
-- (plus the orders still queued) and lifts the pause marker that kept
-- buyers, returns and stock changes out while they were computed. The fence
-- is kept; the ids of orders SQL has closed join the returned set, so a
-- second cancel or expiry of one of them gives nothing back again. Units
-- lent between buckets and not settled are forgotten (the rebuilt values
-- count every order), and the token becomes the bucket's epoch, so a
-- transfer begun before the rebuild is not received after it.
--
-- KEYS[1] stock hash (ver is bumped: see Store.Snapshot)
-- KEYS[2] buyers hash
-- KEYS[3] staging hash with the rebuilt buyers (may be absent: no buyers)
-- KEYS[4] pause marker
-- KEYS[5] returned set
-- KEYS[6] staging set with the ids of closed orders (may be absent)
-- KEYS[7] lent hash: transfers to other buckets not settled
-- KEYS[8] received set: ids of transfers received
-- ARGV[1] total units
-- ARGV[2] units left
-- ARGV[3] per-user limit
-- ARGV[4] the pause marker's token (the rebuild that set it), the new epoch
-- ARGV[5] Unix ms at which the SKU's state expires
-- ARGV[6] Unix ms at which the sale ends (0: no end)
-- ARGV[7] keep: 1 when the per-user limit counts closed orders (see
--         configure.lua)
-- Returns 1, or 0 when the pause marker is not ours any more (it expired and
-- another rebuild started: nothing is changed).
if redis.call('GET', KEYS[4]) ~= ARGV[4] then
  return 0
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('RENAME', KEYS[3], KEYS[2])
  redis.call('PEXPIREAT', KEYS[2], ARGV[5])
else
  redis.call('DEL', KEYS[2])
end
if redis.call('EXISTS', KEYS[6]) == 1 then
  redis.call('SUNIONSTORE', KEYS[5], KEYS[5], KEYS[6])
  redis.call('DEL', KEYS[6])
  redis.call('PEXPIREAT', KEYS[5], ARGV[5])
end
redis.call('HSET', KEYS[1], 'total', ARGV[1], 'left', ARGV[2], 'limit', ARGV[3], 'ends', ARGV[6],
  'moved', 0, 'epoch', ARGV[4], 'keep', ARGV[7])
redis.call('HINCRBY', KEYS[1], 'ver', 1)
redis.call('DEL', KEYS[7], KEYS[8])
redis.call('HSETNX', KEYS[1], 'fence', 0)
redis.call('PEXPIREAT', KEYS[1], ARGV[5])
redis.call('DEL', KEYS[4])
return 1
