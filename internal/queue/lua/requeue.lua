-- Move a dead letter back to ready, due now, with its attempts reset to 0 and
-- its last error cleared (prefixed by common.lua; standard KEYS).
-- KEYS (the standard seven, see common.lua); this script uses KEYS[1] ready, KEYS[4] meta, KEYS[5] dead, KEYS[6] err, KEYS[7] wake
-- ARGV[1] now_ms  ARGV[2] id
-- Returns 1 requeued, 0 no dead letter with this id.
local now = tonumber(ARGV[1])
local id = ARGV[2]
if redis.call('ZREM', KEYS[5], id) == 0 then
  return 0
end
local m = parse_meta(redis.call('HGET', KEYS[4], id))
if not m then
  forget({ id })
  return 0
end
m.attempts = 0
m.token = ''
redis.call('HSET', KEYS[4], id, format_meta(m))
redis.call('HDEL', KEYS[6], id)
redis.call('ZADD', KEYS[1], now, id)
redis.call('PUBLISH', KEYS[7], string.format('%d', now))
return 1
