-- Set a new TTL on a mutex if it still carries our token (compare-and-pexpire).
-- KEYS[1]  lock key
-- ARGV[1]  token
-- ARGV[2]  new ttl in milliseconds
-- Returns  1 extended; 0 not held.
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
