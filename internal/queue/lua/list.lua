-- List tasks of one set in score order (prefixed by common.lua; standard KEYS). Read-only.
-- KEYS (the standard seven, see common.lua); this script uses KEYS[1] ready, KEYS[2] inflight, KEYS[3] data, KEYS[4] meta, KEYS[5] dead, KEYS[6] err
-- ARGV[1] which: "ready", "inflight" or "dead"  ARGV[2] offset  ARGV[3] count (the caller bounds it)
-- Returns { id, score_ms, meta, payload, last_error, ... }, one group per
-- member (meta is empty for a member without metadata), so a page shorter
-- than count means the end.
local key = KEYS[1]
if ARGV[1] == 'dead' then
  key = KEYS[5]
elseif ARGV[1] == 'inflight' then
  key = KEYS[2]
end
local off = tonumber(ARGV[2])
local res = redis.call('ZRANGE', key, off, off + tonumber(ARGV[3]) - 1, 'WITHSCORES')
local ids = members(res)
if #ids == 0 then
  return {}
end
local metas = redis.call('HMGET', KEYS[4], unpack(ids))
local datas = redis.call('HMGET', KEYS[3], unpack(ids))
local errs = redis.call('HMGET', KEYS[6], unpack(ids))
local out = {}
for i, id in ipairs(ids) do
  out[#out + 1] = id
  out[#out + 1] = res[2 * i]
  out[#out + 1] = metas[i] or ''
  out[#out + 1] = datas[i] or ''
  out[#out + 1] = errs[i] or ''
end
return out
