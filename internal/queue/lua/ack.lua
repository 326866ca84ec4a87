-- Acknowledge claimed tasks: delete them, but only where the claim token
-- matches and the task is still in flight; then enqueue the follow-up tasks
-- the handler left (prefixed by common.lua and enqueue_lib.lua; standard
-- KEYS).
-- KEYS (the standard seven, see common.lua); this script uses KEYS[1]
-- ready, KEYS[2] inflight, KEYS[3] data, KEYS[4] meta, KEYS[7] wake
-- ARGV[1]   now_ms
-- ARGV[2]   k, the number of follow-up tasks
-- ARGV[3..] k groups of 5: id, type, payload, due_ms, max_attempts (as
--           enqueue.lua), then pairs of token, id of the tasks to ack
-- Returns {acks, added}: acks holds one integer per pair, 1 deleted, 0
-- stale token or not in flight (the task is left untouched); added counts
-- the follow-ups enqueued. Follow-ups are enqueued whatever the acks'
-- outcome (an id already present is left as it is), and a wake-up is
-- published when one became the queue's earliest.
local now, k = ARGV[1], tonumber(ARGV[2])
local first_pair = 3 + 5 * k
local ids = {}
for i = first_pair + 1, #ARGV, 2 do
  ids[#ids + 1] = ARGV[i]
end
local out, done = {}, {}
if #ids > 0 then
  local metas = redis.call('HMGET', KEYS[4], unpack(ids))
  local leases = redis.call('ZMSCORE', KEYS[2], unpack(ids))
  for i, id in ipairs(ids) do
    local m = parse_meta(metas[i])
    if m and leases[i] and m.token ~= '' and m.token == ARGV[first_pair + 2 * (i - 1)] then
      done[#done + 1] = id
      out[i] = 1
    else
      out[i] = 0
    end
  end
  if #done > 0 then
    redis.call('ZREM', KEYS[2], unpack(done))
    forget(done)
  end
end
local added = 0
if k > 0 then
  for _, r in ipairs(queue_add_all(KEYS[1], KEYS[3], KEYS[4], KEYS[7], ARGV, 3, first_pair - 1, now)) do
    added = added + r
  end
end
return {out, added}
