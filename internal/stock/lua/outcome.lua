-- outcome.lua: settles whether a batch of buys ran, for a retry of a buy
-- whose outcome its caller never learned (a reply that timed out, a
-- connection lost). The batch's script may still be on its way to Redis;
-- after this call it can no longer run, so what the retry learns stays true.
--
-- KEYS[1] stock hash of the batch's part (void_to: see buy.lua)
-- KEYS[2] the part's queue meta hash (task id -> metadata)
-- KEYS[3] the part's queue data hash (task id -> payload)
-- ARGV[1] the batch id (the order task's id)
-- ARGV[2] Unix ms at which the batch was made (in its id)
-- Returns {1, payload} when the batch's task is queued (its script ran and
-- accepted at least one order; the payload lists them); {0} when it is not
-- (it ran and its orders are in SQL, or it accepted none, or it never ran
-- and now never will); {-1} when the part has no state (Redis lost it).
-- Either way void_to is written, at least ARGV[2], so that a replica that
-- has this write has the batch's too (the caller waits for replicas).
local stock, meta, data = KEYS[1], KEYS[2], KEYS[3]
local made = tonumber(ARGV[2])
local void_to = redis.call('HGET', stock, 'void_to')
if not void_to and redis.call('EXISTS', stock) == 0 then
  return {-1}
end
void_to = math.max(tonumber(void_to) or 0, made)
redis.call('HSET', stock, 'void_to', string.format('%d', void_to))
if redis.call('HEXISTS', meta, ARGV[1]) == 1 then
  return {1, redis.call('HGET', data, ARGV[1]) or ''}
end
return {0}
