-- time.lua: the server's clock, {seconds, microseconds} as TIME answers.
--
-- KEYS[1] not read: it names the node that answers (on a Redis Cluster,
--         the master of its slot), so that every instance reads one clock
-- No ARGV.
return redis.call('TIME')
