-- Queue depths in one consistent read (prefixed by common.lua; standard KEYS). Read-only.
-- KEYS (the standard seven, see common.lua); this script uses KEYS[1] ready, KEYS[2] inflight, KEYS[5] dead
-- ARGV[1] now_ms
-- Returns { due, delayed, inflight, dead, oldest_due_ms (-1: nothing due) }
local now = tonumber(ARGV[1])
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local oldest = -1
if first[2] and tonumber(first[2]) <= now then
  oldest = tonumber(first[2])
end
return {
  redis.call('ZCOUNT', KEYS[1], '-inf', now),
  redis.call('ZCOUNT', KEYS[1], '(' .. string.format('%d', now), '+inf'),
  redis.call('ZCARD', KEYS[2]),
  redis.call('ZCARD', KEYS[5]),
  string.format('%d', oldest),
}
