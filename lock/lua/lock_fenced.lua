-- Acquire a mutex and issue its fencing token in the same atomic step.
-- KEYS[1]  lock key
-- KEYS[2]  fence counter key (same hash tag; never expires)
-- ARGV[1]  token of this acquisition
-- ARGV[2]  ttl in milliseconds
-- Returns  the new fence (>= 1) when acquired; 0 when another token holds the lock.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
	return redis.call('INCR', KEYS[2])
end
return 0
