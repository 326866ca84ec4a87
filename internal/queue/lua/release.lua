-- Give claimed tasks back without counting the attempt (graceful shutdown;
-- prefixed by common.lua; standard KEYS): back to ready at now_ms, attempts
-- decremented, token cleared. Publishes on wake so another consumer picks them up.
-- KEYS (the standard seven, see common.lua); this script uses KEYS[1] ready, KEYS[2] inflight, KEYS[4] meta, KEYS[7] wake
-- ARGV[1] now_ms  ARGV[2..] pairs of token, id
-- Returns one integer per pair: 1 released, 0 stale token (untouched).
local now = tonumber(ARGV[1])
local out, gone, newm, back = {}, {}, {}, {}
for i = 2, #ARGV, 2 do
  local tok, id = ARGV[i], ARGV[i + 1]
  local m = held(tok, id)
  if m then
    gone[#gone + 1] = id
    m.token = ''
    if m.attempts > 0 then
      m.attempts = m.attempts - 1
    end
    newm[#newm + 1] = id
    newm[#newm + 1] = format_meta(m)
    back[#back + 1] = now
    back[#back + 1] = id
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
if #gone > 0 then
  unlease(gone, newm)
  redis.call('ZADD', KEYS[1], unpack(back))
  redis.call('PUBLISH', KEYS[7], string.format('%d', now))
end
return out
