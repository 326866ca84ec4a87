-- Leave a reentrant lock once; delete it and wake waiters when the count reaches zero.
-- KEYS[1]  reentrant lock key
-- ARGV[1]  owner id
-- ARGV[2]  ttl in milliseconds, re-armed while still held
-- Publishes "1" on the channel named KEYS[1] when released.
-- Returns  -1 not the owner (or expired); n > 0 still held n times; 0 released.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
	return -1
end
local n = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if n > 0 then
	redis.call('PEXPIRE', KEYS[1], ARGV[2])
	return n
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', KEYS[1], '1')
return 0
