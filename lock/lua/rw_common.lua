-- Helpers prepended to rw_rlock.lua and rw_wlock.lua.
--
-- rw_sweep(key, a, b) removes the expired fields of the read-write hash key
-- and returns now (server milliseconds), whether a live field of kind a or b
-- ("r:", "w:" or "p:") remains, and the latest expiry among live fields.
local function rw_sweep(key, a, b)
	local t = redis.call('TIME')
	local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
	local found = false
	local last = 0
	local h = redis.call('HGETALL', key)
	for i = 1, #h, 2 do
		local exp = tonumber(h[i + 1])
		if exp <= now then
			redis.call('HDEL', key, h[i])
		else
			local kind = string.sub(h[i], 1, 2)
			if kind == a or kind == b then
				found = true
			end
			if exp > last then last = exp end
		end
	end
	return now, found, last
end
