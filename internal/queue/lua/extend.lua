-- Extend leases of claimed tasks (prefixed by common.lua; standard KEYS).
-- KEYS (the standard seven, see common.lua); this script uses KEYS[2] inflight, KEYS[4] meta
-- ARGV[1] new deadline (ms)  ARGV[2..] pairs of token, id
-- Returns one integer per pair: 1 extended, 0 stale token or not in flight.
local deadline = tonumber(ARGV[1])
local out = {}
for i = 2, #ARGV, 2 do
  local tok, id = ARGV[i], ARGV[i + 1]
  if held(tok, id) then
    redis.call('ZADD', KEYS[2], 'XX', deadline, id)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
