-- Queue depths in one consistent read (prefixed by common.lua; standard KEYS). Read-only.
-- KEYS (the standard seven, see common.lua); this script uses KEYS[1] ready, KEYS[2] inflight, KEYS[4] meta, KEYS[5] dead
-- ARGV[1] now_ms
-- ARGV[2] a task type to count apart ('' for none): its pending tasks are
--         left out of due, delayed and oldest_due and counted in apart.
--         Counting them reads every pending task: for an operator's look,
--         not for a metric.
-- Returns { due, delayed, inflight, dead, oldest_due_ms (-1: nothing due), apart }
local now = tonumber(ARGV[1])
local due = redis.call('ZCOUNT', KEYS[1], '-inf', now)
local delayed = redis.call('ZCOUNT', KEYS[1], '(' .. string.format('%d', now), '+inf')
local oldest = -1
local apart = 0
if ARGV[2] == '' then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if first[2] and tonumber(first[2]) <= now then
    oldest = tonumber(first[2])
  end
else
  local all = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
  for i = 1, #all, 2 do
    local m = parse_meta(redis.call('HGET', KEYS[4], all[i]))
    local at = tonumber(all[i + 1])
    if m and m.typ == ARGV[2] then
      apart = apart + 1
      if at <= now then
        due = due - 1
      else
        delayed = delayed - 1
      end
    elseif oldest < 0 and at <= now then
      oldest = at
    end
  end
end
return {
  due,
  delayed,
  redis.call('ZCARD', KEYS[2]),
  redis.call('ZCARD', KEYS[5]),
  string.format('%d', oldest),
  apart,
}
