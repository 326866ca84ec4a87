-- receive.lua: the second step of moving units between two buckets of a
-- SKU (lend.lua is the first): adds the lent units to the receiving
-- bucket, once per transfer however often it is called.
--
-- KEYS[1] the receiving bucket's stock hash: left, moved, epoch, ver
-- KEYS[2] its pause marker, set while the SKU is being rebuilt
-- KEYS[3] its received set: ids of transfers received
-- ARGV[1] transfer id
-- ARGV[2] units
-- ARGV[3] the lending bucket's epoch when it lent them
-- Returns {code, left}: 1 received, 0 received before, -1 no state, -4
-- paused, -6 the epochs differ: a rebuild wrote this bucket since the units
-- were lent (they are not added; see Store.land). Nothing is written unless
-- code is 1.
if redis.call('EXISTS', KEYS[2]) == 1 then
  return {-4, 0}
end
local st = redis.call('HMGET', KEYS[1], 'left', 'epoch')
if not st[1] then
  return {-1, 0}
end
if (st[2] or '0') ~= ARGV[3] then
  return {-6, tonumber(st[1])}
end
if redis.call('SADD', KEYS[3], ARGV[1]) == 0 then
  return {0, tonumber(st[1])}
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[3], ttl)
end
redis.call('HINCRBY', KEYS[1], 'moved', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'ver', 1)
return {1, redis.call('HINCRBY', KEYS[1], 'left', ARGV[2])}
