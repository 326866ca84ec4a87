-- Set a new TTL on a reentrant lock held by the owner.
-- KEYS[1]  reentrant lock key
-- ARGV[1]  owner id
-- ARGV[2]  ttl in milliseconds
-- Returns  1 extended; 0 not held by the owner.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
	return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
