-- Remaining time of one holder of a read-write lock.
-- KEYS[1]  read-write lock key (hash)
-- ARGV[1]  field: "r:<token>" or "w:<token>"
-- Returns  remaining milliseconds (> 0); -2 when not held.
local v = redis.call('HGET', KEYS[1], ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not v or tonumber(v) <= now then
	return -2
end
return tonumber(v) - now
