-- Release a mutex if, and only if, it still carries our token (compare-and-delete),
-- then wake waiters.
-- KEYS[1]  lock key
-- ARGV[1]  token
-- Publishes "1" (wake one waiter per process) on the channel named KEYS[1].
-- Returns  1 released; 0 not held (expired or another token).
if redis.call('GET', KEYS[1]) == ARGV[1] then
	redis.call('DEL', KEYS[1])
	redis.call('PUBLISH', KEYS[1], '1')
	return 1
end
return 0
