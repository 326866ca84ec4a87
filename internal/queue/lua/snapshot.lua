-- Every task of one type, in any state, read in one step (prefixed by
-- common.lua; standard KEYS). A reader that pages through the ready and
-- in-flight sets one call at a time can miss a task that a worker claims,
-- acks or hands back between two calls; this script cannot.
-- KEYS (the standard seven, see common.lua); this script uses KEYS[3] data,
-- KEYS[4] meta, KEYS[5] dead
-- ARGV[1] task type
-- Returns {id1, payload1, dead1, id2, ...}: dead is 1 for a dead letter, 0
-- for a task pending or in flight.
local out = {}
local all = redis.call('HGETALL', KEYS[4])
for i = 1, #all, 2 do
  local m = parse_meta(all[i + 1])
  if m and m.typ == ARGV[1] then
    local id = all[i]
    local payload = redis.call('HGET', KEYS[3], id)
    if payload then
      local dead = 0
      if redis.call('ZSCORE', KEYS[5], id) then
        dead = 1
      end
      out[#out + 1] = id
      out[#out + 1] = payload
      out[#out + 1] = dead
    end
  end
end
return out
