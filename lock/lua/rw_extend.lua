-- Give one live holder of a read-write lock a new expiry.
-- KEYS[1]  read-write lock key (hash)
-- ARGV[1]  field: "r:<token>" or "w:<token>"
-- ARGV[2]  ttl in milliseconds
-- Returns  1 extended; 0 not held (absent or expired).
local v = redis.call('HGET', KEYS[1], ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not v or tonumber(v) <= now then
	return 0
end
local exp = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], ARGV[1], exp)
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
	redis.call('PEXPIREAT', KEYS[1], exp)
end
return 1
