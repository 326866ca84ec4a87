-- configure.lua: sets a SKU's (or one bucket's) total and per-user limit.
-- Only a SKU new to both stores starts with left = total; an existing one
-- keeps what is sold: left moves by the change of total and may not go
-- below zero. A SKU that SQL knows but Redis does not (Redis lost its data)
-- is never created here: it must be rebuilt from SQL, or its past buyers
-- could buy again and sold units would be sold twice.
--
-- KEYS[1] stock hash (ver is bumped by every change: see Store.Snapshot)
-- KEYS[2] pause marker, set while the state is being rebuilt
-- KEYS[3..6] buyers hash, returned set, lent hash, received set: the rest
--         of the state, which ends when the stock hash does (ARGV[4] moves
--         them all: a returned set or buyers hash that ended first would
--         let a repeated return give units back twice, or past shoppers
--         buy past the limit)
-- ARGV[1] units: the total (mode set), units to add to the total and to
--         left (add), or the most units to cut from left and the total (cut)
-- ARGV[2] per-user limit (0 = none)
-- ARGV[3] 1 when the SKU was just created in SQL (may be created here), 0
--         otherwise
-- ARGV[4] Unix ms at which the SKU's state expires (its sale and payment
--         window are long over)
-- ARGV[5] Unix ms at which the sale ends: buys from then on are refused (0:
--         no end)
-- ARGV[6] mode: set, add or cut (add and cut are how a SKU split into
--         buckets changes its total: the buckets' shares move as they lend
--         each other units, so only the change is given)
-- ARGV[7] keep: 1 when the per-user limit counts the shopper's cancelled
--         and expired orders (return.lua then leaves their count), else 0
-- Returns {code, left, applied}: 1 created, 2 updated, -1 refused (total
-- below the units already taken; nothing changed), -2 missing (not created:
-- rebuild it), -4 paused (a rebuild is in progress; nothing changed);
-- applied is the units added or cut.
local n, limit, mode = tonumber(ARGV[1]), ARGV[2], ARGV[6]
if redis.call('EXISTS', KEYS[2]) == 1 then
  return {-4, 0, 0}
end
local cur = redis.call('HMGET', KEYS[1], 'total', 'left')
if not cur[1] then
  if ARGV[3] ~= '1' or mode ~= 'set' then
    return {-2, 0, 0}
  end
  redis.call('HSET', KEYS[1], 'total', n, 'left', n, 'limit', limit, 'fence', 0, 'ends', ARGV[5], 'moved', 0, 'ver', 1, 'keep', ARGV[7])
  redis.call('PEXPIREAT', KEYS[1], ARGV[4])
  return {1, n, n}
end
local total, left = tonumber(cur[1]), tonumber(cur[2])
local applied = 0
if mode == 'set' then
  left = left + n - total
  if left < 0 then
    return {-1, tonumber(cur[2]), 0}
  end
  total = n
elseif mode == 'add' then
  applied = n
  total, left = total + n, left + n
else
  applied = math.min(left, n)
  total, left = total - applied, left - applied
end
redis.call('HSET', KEYS[1], 'total', total, 'left', left, 'limit', limit, 'ends', ARGV[5], 'keep', ARGV[7])
redis.call('HINCRBY', KEYS[1], 'ver', 1)
for _, key in ipairs({KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6]}) do
  redis.call('PEXPIREAT', key, ARGV[4])
end
return {2, left, applied}
