-- Acknowledge claimed tasks: delete them, but only where the claim token
-- matches and the task is still in flight (prefixed by common.lua; standard KEYS).
-- KEYS (the standard seven, see common.lua); this script uses KEYS[2] inflight, KEYS[3] data, KEYS[4] meta, KEYS[6] err
-- ARGV: pairs of token, id
-- Returns one integer per pair: 1 deleted, 0 stale token or not in flight
-- (the task is left untouched).
local ids = {}
for i = 2, #ARGV, 2 do
  ids[#ids + 1] = ARGV[i]
end
if #ids == 0 then
  return {}
end
local metas = redis.call('HMGET', KEYS[4], unpack(ids))
local leases = redis.call('ZMSCORE', KEYS[2], unpack(ids))
local out, done = {}, {}
for i, id in ipairs(ids) do
  local m = parse_meta(metas[i])
  if m and leases[i] and m.token ~= '' and m.token == ARGV[2 * i - 1] then
    done[#done + 1] = id
    out[i] = 1
  else
    out[i] = 0
  end
end
if #done > 0 then
  redis.call('ZREM', KEYS[2], unpack(done))
  forget(done)
end
return out
