-- Read one task (prefixed by common.lua; standard KEYS). Read-only.
-- KEYS (the standard seven, see common.lua); this script uses KEYS[1] ready, KEYS[2] inflight, KEYS[3] data, KEYS[4] meta, KEYS[5] dead, KEYS[6] err
-- ARGV[1] id
-- Returns false when unknown, else { state, score_ms, meta, payload, last_error }
-- with state "pending" (score: due), "inflight" (score: lease deadline) or
-- "dead" (score: time of death).
local id = ARGV[1]
local meta = redis.call('HGET', KEYS[4], id)
if not meta then
  return false
end
local state, score = 'pending', redis.call('ZSCORE', KEYS[1], id)
if not score then
  state, score = 'inflight', redis.call('ZSCORE', KEYS[2], id)
end
if not score then
  state, score = 'dead', redis.call('ZSCORE', KEYS[5], id)
end
if not score then
  return false
end
return { state, score, meta, redis.call('HGET', KEYS[3], id) or '', redis.call('HGET', KEYS[6], id) or '' }
