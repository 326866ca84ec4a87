-- control.lua: an operator's change to a waiting room's controls, in one
-- atomic step, so that two operators' changes are made one after the
-- other and the record lists each change that was made. The room script
-- (room.lua) reads the controls at every call.
--
-- KEYS[1] control HASH: state ('paused', 'open' or 'closed'; absent:
--         running), rate (admissions per second overriding the SKU's;
--         absent: none)
-- KEYS[2] changes LIST: the changes made, oldest first, each a JSON object
-- KEYS[3] the room's meta HASH (room.lua): its admission credit is
--         reset when admission stops or starts again, so that a paused
--         time earns no admissions
-- ARGV[1] 'pause', 'resume', 'rate', 'open' or 'close'
-- ARGV[2] the rate of 'rate' (0: back to the SKU's own)
-- ARGV[3] now, Unix ms
-- ARGV[4] the change's JSON object, as the record keeps it
-- ARGV[5] the most changes a room keeps
-- ARGV[6] Unix ms at which the keys expire (the room's own expiry)
-- Returns {code, state, rate, the changes...}
--   code  1 changed and recorded; 0 nothing to change (the room is in
--         that state already: a replay); -1 the room is closed; -2 the
--         record is full. Nothing is written unless code is 1.
local control, changes, meta = KEYS[1], KEYS[2], KEYS[3]
local action, now = ARGV[1], tonumber(ARGV[3])

local c = redis.call('HMGET', control, 'state', 'rate')
local state, rate = c[1] or 'running', tonumber(c[2]) or 0
local new, nrate = state, rate
if action == 'pause' then
  new = 'paused'
elseif action == 'resume' then
  new = 'running'
elseif action == 'open' then
  new = 'open'
elseif action == 'close' then
  new = 'closed'
elseif action == 'rate' then
  nrate = tonumber(ARGV[2])
end

local code = 1
if new == state and nrate == rate then
  code = 0
elseif state == 'closed' then
  code = -1
elseif redis.call('LLEN', changes) >= tonumber(ARGV[5]) then
  code = -2
end
if code == 1 then
  if new == 'running' then
    redis.call('HDEL', control, 'state')
  else
    redis.call('HSET', control, 'state', new)
  end
  if nrate > 0 then
    redis.call('HSET', control, 'rate', nrate)
  else
    redis.call('HDEL', control, 'rate')
  end
  redis.call('RPUSH', changes, ARGV[4])
  local stopped = function(s) return s == 'paused' or s == 'closed' end
  if stopped(state) ~= stopped(new) then
    -- Admission stops or starts again now: nothing earned before counts
    -- after, and the time stopped earns nothing.
    local last = tonumber(redis.call('HGET', meta, 'last')) or 0
    redis.call('HSET', meta, 'credit', '0', 'last', math.max(now, last))
    redis.call('PEXPIREAT', meta, ARGV[6])
  end
  redis.call('PEXPIREAT', control, ARGV[6])
  redis.call('PEXPIREAT', changes, ARGV[6])
  state, rate = new, nrate
end
local out = {code, state, tostring(rate)}
local list = redis.call('LRANGE', changes, 0, -1)
for i = 1, #list do
  out[#out + 1] = list[i]
end
return out
