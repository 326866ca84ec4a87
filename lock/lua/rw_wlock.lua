-- Take the write lock: only when no live reader and no live writer remain.
-- Field layout as in rw_rlock.lua.
-- KEYS[1]  read-write lock key (hash)
-- ARGV[1]  token of this writer
-- ARGV[2]  ttl in milliseconds
-- ARGV[3]  milliseconds to keep a waiting-writer marker "p:<token>" when the
--          lock is busy (0: leave no marker, as TryLock does)
-- Returns  1 acquired; 0 busy (marker set or refreshed when ARGV[3] > 0).
local now, busy, last = rw_sweep(KEYS[1], 'w:', 'r:')
local exp
if not busy then
	redis.call('HDEL', KEYS[1], 'p:' .. ARGV[1])
	exp = now + tonumber(ARGV[2])
	redis.call('HSET', KEYS[1], 'w:' .. ARGV[1], exp)
elseif tonumber(ARGV[3]) > 0 then
	exp = now + tonumber(ARGV[3])
	redis.call('HSET', KEYS[1], 'p:' .. ARGV[1], exp)
else
	return 0
end
if exp > last then last = exp end
redis.call('PEXPIREAT', KEYS[1], last)
if busy then
	return 0
end
return 1
