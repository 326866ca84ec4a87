-- lend.lua: the first step of moving units between two buckets of a SKU:
-- takes units from the lending bucket's left and records the transfer as
-- not settled. receive.lua is the second step, on the receiving bucket; a
-- process that dies between the two leaves the units in neither bucket's
-- left (undersold until a reconcile), never in both.
--
-- KEYS[1] the lending bucket's stock hash: left, moved (units received less
--         units lent), epoch (changed by every rebuild), ver (bumped by
--         every write that adds units to left or a move to lent: see
--         Store.Snapshot)
-- KEYS[2] its pause marker, set while the SKU is being rebuilt
-- KEYS[3] its lent hash: transfer id -> "units:bucket:epoch"
-- ARGV[1] transfer id
-- ARGV[2] units the receiving bucket needs
-- ARGV[3] the receiving bucket
-- Lends half of what is left, at least what is needed, at most what is
-- left: a bucket whose shoppers ran it dry is likely to need more.
-- Returns {code, units, epoch}: 1 lent (units 0: nothing left), -1 no state
-- (Redis lost it), -4 paused. Nothing is written unless units > 0.
if redis.call('EXISTS', KEYS[2]) == 1 then
  return {-4, 0, ''}
end
local st = redis.call('HMGET', KEYS[1], 'left', 'epoch')
if not st[1] then
  return {-1, 0, ''}
end
local left, epoch = tonumber(st[1]), st[2] or '0'
local n = math.min(left, math.max(tonumber(ARGV[2]), math.ceil(left / 2)))
if n <= 0 then
  return {1, 0, epoch}
end
redis.call('HINCRBY', KEYS[1], 'left', -n)
redis.call('HINCRBY', KEYS[1], 'moved', -n)
redis.call('HINCRBY', KEYS[1], 'ver', 1)
redis.call('HSET', KEYS[3], ARGV[1], n .. ':' .. ARGV[3] .. ':' .. epoch)
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[3], ttl)
end
return {1, n, epoch}
