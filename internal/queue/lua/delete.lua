-- Delete a dead letter for good (prefixed by common.lua; standard KEYS).
-- KEYS (the standard seven, see common.lua); this script uses KEYS[3] data, KEYS[4] meta, KEYS[5] dead, KEYS[6] err
-- ARGV[1] id
-- Returns {1, meta, payload} deleted (what the letter was), {0} no dead letter
-- with this id. Only the call that deletes a letter gets it back, so a caller
-- that acts on a deleted letter (gives its units back) acts once.
if redis.call('ZREM', KEYS[5], ARGV[1]) == 0 then
  return {0}
end
local meta = redis.call('HGET', KEYS[4], ARGV[1]) or ''
local payload = redis.call('HGET', KEYS[3], ARGV[1]) or ''
forget({ ARGV[1] })
return {1, meta, payload}
