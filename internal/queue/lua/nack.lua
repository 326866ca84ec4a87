-- Report failed attempts (prefixed by common.lua; standard KEYS). A task with
-- attempts left goes back to ready at retry_at_ms; one that used its last
-- attempt becomes a dead letter. The error text is kept in err either way.
-- KEYS (the standard seven, see common.lua); this script uses KEYS[1] ready, KEYS[2] inflight, KEYS[3] data, KEYS[4] meta, KEYS[5] dead, KEYS[6] err
-- ARGV[1] now_ms  ARGV[2] dead_cap (0: unlimited)
-- ARGV[3..] groups of 4: token, id, retry_at_ms, error text
-- Returns { { per task: 1 retried, 2 dead-lettered, 0 stale token (untouched) },
--           trimmed_dead_ids }
local now = tonumber(ARGV[1])
local out = {}
local gone, newm, errs, back = {}, {}, {}, {}
local ndead = 0
for i = 3, #ARGV, 4 do
  local tok, id = ARGV[i], ARGV[i + 1]
  local m = held(tok, id)
  if m then
    gone[#gone + 1] = id
    m.token = ''
    newm[#newm + 1] = id
    newm[#newm + 1] = format_meta(m)
    errs[#errs + 1] = id
    errs[#errs + 1] = ARGV[i + 3]
    if m.attempts >= m.max then
      redis.call('ZADD', KEYS[5], now, id)
      ndead = ndead + 1
      out[#out + 1] = 2
    else
      back[#back + 1] = tonumber(ARGV[i + 2])
      back[#back + 1] = id
      out[#out + 1] = 1
    end
  else
    out[#out + 1] = 0
  end
end
if #gone > 0 then
  unlease(gone, newm)
  redis.call('HSET', KEYS[6], unpack(errs))
end
if #back > 0 then
  redis.call('ZADD', KEYS[1], unpack(back))
end
local trimmed = {}
if ndead > 0 then
  trimmed = trim_dead(tonumber(ARGV[2]))
end
return { out, trimmed }
