-- Cancel a pending task (prefixed by common.lua; standard KEYS).
-- KEYS (the standard seven, see common.lua); this script uses KEYS[1] ready, KEYS[2] inflight, KEYS[3] data, KEYS[4] meta, KEYS[6] err
-- ARGV[1] id
-- Returns 1 removed, 0 no pending task with this id, -1 the task is in flight.
local id = ARGV[1]
if redis.call('ZSCORE', KEYS[2], id) then
  return -1
end
if redis.call('ZREM', KEYS[1], id) == 0 then
  return 0
end
forget({ id })
return 1
