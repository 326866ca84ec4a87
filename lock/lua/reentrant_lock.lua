-- Enter a reentrant lock: free, or already held by the same owner.
-- KEYS[1]  reentrant lock key (hash: owner id -> hold count)
-- ARGV[1]  owner id
-- ARGV[2]  ttl in milliseconds (re-armed on every entry)
-- Returns  the owner's hold count after entering (>= 1); 0 when another owner holds it.
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
	local n = redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
	redis.call('PEXPIRE', KEYS[1], ARGV[2])
	return n
end
return 0
