-- return.lua: gives a closed order's units back to the SKU (the bucket it
-- was taken from), once per order however often it is called (expiry tasks
-- are delivered at least once, a shopper may cancel twice). The returned
-- set outlives nothing it must: a rebuild from SQL fills it with every order
-- SQL has closed.
--
-- KEYS[1] stock hash: total, left, moved (units received from other buckets
--         less units lent to them), ver (bumped: units came back), keep (1:
--         the per-user limit counts closed orders)
-- KEYS[2] buyers hash
-- KEYS[3] returned set: ids of orders whose units came back
-- KEYS[4] pause marker, set while the state is being rebuilt
-- ARGV[1] order id
-- ARGV[2] user id
-- ARGV[3] qty
-- ARGV[4] 'closed' (the shopper's order was cancelled or expired: their
--         count keeps the units when keep is 1) or 'void' (the order never
--         was the shopper's, e.g. a dropped dead letter: the count gives
--         them back)
-- Returns {code, left}: 1 returned now, 0 returned before, -1 no stock hash
-- (Redis state lost; a rebuild from SQL counts the order as closed), -4
-- paused (a rebuild is reading SQL: retry when it is done; nothing changed).
if redis.call('EXISTS', KEYS[4]) == 1 then
  return {-4, 0}
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {-1, 0}
end
if redis.call('SADD', KEYS[3], ARGV[1]) == 0 then
  return {0, tonumber(redis.call('HGET', KEYS[1], 'left'))}
end
-- The set lives as long as the SKU's state.
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[3], ttl)
end
local qty = tonumber(ARGV[3])
local left = redis.call('HINCRBY', KEYS[1], 'left', qty)
redis.call('HINCRBY', KEYS[1], 'ver', 1)
-- A bucket holds at most its share plus what it received from the other
-- buckets, less what it lent them.
local cur = redis.call('HMGET', KEYS[1], 'total', 'moved')
local cap = tonumber(cur[1]) + (tonumber(cur[2]) or 0)
if left > cap then
  redis.call('HSET', KEYS[1], 'left', cap)
  left = cap
end
if ARGV[4] == 'void' or redis.call('HGET', KEYS[1], 'keep') ~= '1' then
  if redis.call('HINCRBY', KEYS[2], ARGV[2], -qty) <= 0 then
    redis.call('HDEL', KEYS[2], ARGV[2])
  end
end
return {1, left}
