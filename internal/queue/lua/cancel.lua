-- Cancel a pending task (prefixed by common.lua; standard KEYS).
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
