-- code.lua: a shopper joins a waiting room with a priority code, in one
-- atomic step: the code is used once, and its ticket goes to the priority
-- line, which the room script (lua/room.lua) admits before the line.
--
-- KEYS[1] meta HASH (room.lua): epoch and since (set by the first ticket
--         issued), pseq (priority tickets issued), joined
-- KEYS[2] who HASH: shopper -> ticket
-- KEYS[3] prio ZSET: ticket -> pseq
-- KEYS[4] codes HASH: the SHA-256 of a code (hex) -> '' while unused,
--         then the ticket it issued
-- KEYS[5] control HASH (lua/control.lua): state
-- ARGV[1] 'add' or 'use'
-- ARGV[2] now, Unix ms
-- ARGV[3] Unix ms at which the room's keys expire
-- 'add': ARGV[4] the most codes a room keeps; ARGV[5..] the codes' hashes.
--   Returns {1, codes, used}; {-1} the room is closed; {-2} the room would
--   hold more than the most codes. Nothing is written unless 1.
-- 'use': ARGV[4] the shopper; ARGV[5] the ticket to issue; ARGV[6] the
--   code's hash.
--   Returns {1, ticket, issued}: the code's ticket, issued by this call
--   (1) or before, to this shopper (0: a retry); {-1} the room is closed;
--   {-3} no such code; {-4} the code was used by another shopper; {-5} the
--   shopper holds a ticket of the line already. Nothing is written unless
--   1 with issued 1.
local meta, who, prio, codes = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now, keep = ARGV[2], ARGV[3]
if redis.call('HGET', KEYS[5], 'state') == 'closed' then
  return {-1}
end

if ARGV[1] == 'add' then
  local n = #ARGV - 4
  if redis.call('HLEN', codes) + n > tonumber(ARGV[4]) then
    return {-2}
  end
  for i = 5, #ARGV do
    redis.call('HSET', codes, ARGV[i], '')
  end
  redis.call('PEXPIREAT', codes, keep)
  return {1, redis.call('HLEN', codes), tonumber(redis.call('HGET', meta, 'pseq')) or 0}
end

local user, ticket, code = ARGV[4], ARGV[5], ARGV[6]
local used = redis.call('HGET', codes, code)
if not used then
  return {-3}
end
local held = redis.call('HGET', who, user)
if used ~= '' then
  if used == held then
    return {1, held, 0}
  end
  return {-4}
end
if held then
  return {-5}
end
redis.call('HSET', codes, code, ticket)
redis.call('HSET', who, user, ticket)
if redis.call('HSETNX', meta, 'epoch', ticket) == 1 then
  redis.call('HSET', meta, 'since', now)
end
local pseq = redis.call('HINCRBY', meta, 'pseq', 1)
redis.call('ZADD', prio, pseq, ticket)
redis.call('HINCRBY', meta, 'joined', 1)
for _, key in ipairs({meta, who, prio, codes}) do
  redis.call('PEXPIREAT', key, keep)
end
return {1, ticket, 1}
