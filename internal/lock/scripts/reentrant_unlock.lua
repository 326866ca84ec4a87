-- Leave a reentrant lock once; delete it and wake waiters when the count reaches zero.
-- KEYS[1]  reentrant lock key
-- ARGV[1]  owner id
-- ARGV[2]  pub/sub channel of the lock
-- ARGV[3]  ttl in milliseconds, re-armed while still held
-- Returns  -1 not the owner (or expired); n > 0 still held n times; 0 released.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
	return -1
end
local n = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if n > 0 then
	redis.call('PEXPIRE', KEYS[1], ARGV[3])
	return n
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], '1')
return 0
