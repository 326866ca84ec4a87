-- Delete a dead letter for good (prefixed by common.lua; standard KEYS).
-- KEYS (the standard seven, see common.lua); this script uses KEYS[3] data, KEYS[4] meta, KEYS[5] dead, KEYS[6] err
-- ARGV[1] id
-- Returns 1 deleted, 0 no dead letter with this id.
if redis.call('ZREM', KEYS[5], ARGV[1]) == 0 then
  return 0
end
forget({ ARGV[1] })
return 1
