-- Remove one holder's field (a reader, the writer, or a waiting-writer marker)
-- if it is still live, then wake every waiter: after a writer several readers
-- may go at once.
-- KEYS[1]  read-write lock key (hash)
-- ARGV[1]  field: "r:<token>", "w:<token>" or "p:<token>"
-- Publishes "a" (wake every waiter) on the channel named KEYS[1].
-- Returns  1 removed; 0 not held (absent or already expired).
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then
	return 0
end
redis.call('HDEL', KEYS[1], ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('PUBLISH', KEYS[1], 'a')
if tonumber(v) <= now then
	return 0
end
return 1
