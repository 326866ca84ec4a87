-- Remaining TTL of a reentrant lock held by the owner.
-- KEYS[1]  reentrant lock key
-- ARGV[1]  owner id
-- Returns  remaining milliseconds (> 0); -2 when not held by the owner.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
	return redis.call('PTTL', KEYS[1])
end
return -2
