-- Claim up to n due tasks in due-time order (prefixed by common.lua; standard KEYS).
-- First returns at most recover_limit expired leases to ready (or to the dead
-- set when their attempts are used up), then moves the first n tasks with
-- due <= now from ready to inflight with deadline now + lease_ms, counts an
-- attempt and stamps them with token.
-- KEYS (the standard seven, see common.lua); this script uses KEYS[1] ready, KEYS[2] inflight, KEYS[3] data, KEYS[4] meta, KEYS[5] dead, KEYS[6] err
-- ARGV[1] now_ms  ARGV[2] n  ARGV[3] lease_ms  ARGV[4] token
-- ARGV[5] recover_limit  ARGV[6] dead_cap (0: unlimited)
-- Returns { recovered, dead_lettered, trimmed_dead_ids, next_wake_ms (-1: idle),
--           { id, due_ms, meta, payload, id, due_ms, meta, payload, ... } }
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local lease = tonumber(ARGV[3])
local token = ARGV[4]
local nrec, ndead = recover(now, tonumber(ARGV[5]))
local trimmed = {}
if ndead > 0 then
  trimmed = trim_dead(tonumber(ARGV[6]))
end
local items = {}
if n > 0 then
  local res = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, n)
  local ids = members(res)
  local k = #ids
  if k > 0 then
    local metas = redis.call('HMGET', KEYS[4], unpack(ids))
    local datas = redis.call('HMGET', KEYS[3], unpack(ids))
    redis.call('ZREMRANGEBYRANK', KEYS[1], 0, k - 1)
    local leases, newm, orphans = {}, {}, {}
    local deadline = now + lease
    for i, id in ipairs(ids) do
      local ms = claim_meta(metas[i], token)
      if not ms then
        orphans[#orphans + 1] = id
      else
        newm[#newm + 1] = id
        newm[#newm + 1] = ms
        leases[#leases + 1] = deadline
        leases[#leases + 1] = id
        items[#items + 1] = id
        items[#items + 1] = res[2 * i]
        items[#items + 1] = ms
        items[#items + 1] = datas[i] or ''
      end
    end
    if #leases > 0 then
      redis.call('ZADD', KEYS[2], unpack(leases))
      redis.call('HSET', KEYS[4], unpack(newm))
    end
    forget(orphans)
  end
end
return { nrec, ndead, trimmed, next_wake(), items }
