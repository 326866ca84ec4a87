-- configure.lua: sets a SKU's total and per-user limit. A new SKU starts with
-- left = total; an existing one keeps what is sold: left moves by the change
-- of total and may not go below zero.
--
-- KEYS[1] stock hash
-- ARGV[1] total units
-- ARGV[2] per-user limit (0 = none)
-- Returns {code, left}: 1 created, 2 updated, -1 refused (total below the
-- units already taken; nothing changed)
local total, limit = tonumber(ARGV[1]), ARGV[2]
local cur = redis.call('HMGET', KEYS[1], 'total', 'left')
if not cur[1] then
  redis.call('HSET', KEYS[1], 'total', total, 'left', total, 'limit', limit, 'fence', 0)
  return {1, total}
end
local left = tonumber(cur[2]) + total - tonumber(cur[1])
if left < 0 then
  return {-1, tonumber(cur[2])}
end
redis.call('HSET', KEYS[1], 'total', total, 'left', left, 'limit', limit)
return {2, left}
