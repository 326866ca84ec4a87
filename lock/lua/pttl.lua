-- Remaining TTL of a mutex if it carries our token.
-- KEYS[1]  lock key
-- ARGV[1]  token
-- Returns  remaining milliseconds (> 0); -2 when not held by the token.
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('PTTL', KEYS[1])
end
return -2
