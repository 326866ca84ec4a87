-- Take a read lock. The hash holds one field per holder, valued with its expiry
-- time in server milliseconds: "r:<token>" readers, "w:<token>" the writer,
-- "p:<token>" a writer waiting for readers to leave (blocks new readers so
-- writers are not starved). Expired fields are removed first.
-- KEYS[1]  read-write lock key (hash)
-- ARGV[1]  token of this reader
-- ARGV[2]  ttl in milliseconds
-- Returns  1 acquired; 0 blocked by a writer or a waiting writer.
local now, blocked, last = rw_sweep(KEYS[1], 'w:', 'p:')
if blocked then
	return 0
end
local exp = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'r:' .. ARGV[1], exp)
if exp > last then last = exp end
redis.call('PEXPIREAT', KEYS[1], last)
return 1
