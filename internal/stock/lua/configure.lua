-- configure.lua: sets a SKU's total and per-user limit. Only a SKU new to
-- both stores starts with left = total; an existing one keeps what is sold:
-- left moves by the change of total and may not go below zero. A SKU that
-- SQL knows but Redis does not (Redis lost its data) is never created here:
-- it must be rebuilt from SQL, or its past buyers could buy again and sold
-- units would be sold twice.
--
-- KEYS[1] stock hash
-- KEYS[2] pause marker, set while the state is being rebuilt
-- ARGV[1] total units
-- ARGV[2] per-user limit (0 = none)
-- ARGV[3] 1 when the SKU was just created in SQL (may be created here), 0
--         otherwise
-- ARGV[4] Unix ms at which the SKU's state expires (its sale and payment
--         window are long over)
-- ARGV[5] Unix ms at which the sale ends: buys from then on are refused (0:
--         no end)
-- Returns {code, left}: 1 created, 2 updated, -1 refused (total below the
-- units already taken; nothing changed), -2 missing (not created: rebuild
-- it), -4 paused (a rebuild is in progress; nothing changed)
local total, limit = tonumber(ARGV[1]), ARGV[2]
if redis.call('EXISTS', KEYS[2]) == 1 then
  return {-4, 0}
end
local cur = redis.call('HMGET', KEYS[1], 'total', 'left')
if not cur[1] then
  if ARGV[3] ~= '1' then
    return {-2, 0}
  end
  redis.call('HSET', KEYS[1], 'total', total, 'left', total, 'limit', limit, 'fence', 0, 'ends', ARGV[5])
  redis.call('PEXPIREAT', KEYS[1], ARGV[4])
  return {1, total}
end
local left = tonumber(cur[2]) + total - tonumber(cur[1])
if left < 0 then
  return {-1, tonumber(cur[2])}
end
redis.call('HSET', KEYS[1], 'total', total, 'left', left, 'limit', limit, 'ends', ARGV[5])
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
return {2, left}
