-- Enqueue a batch of tasks (prefixed by enqueue_lib.lua).
-- KEYS: ready, data, meta, wake (the EnqueueKeys order)
-- ARGV[1]   now_ms
-- ARGV[2..] groups of 5: id, type, payload, due_ms, max_attempts
-- Returns one integer per task: 1 added, 0 duplicate id (left untouched).
-- Publishes once on wake, the earliest new due time, when a new task became
-- the earliest of the queue.
local now = ARGV[1]
local first = queue_earliest(KEYS[1])
local out = {}
local earliest = nil
for i = 2, #ARGV, 5 do
  local due = queue_add(KEYS[1], KEYS[2], KEYS[3], ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], now)
  if not due then
    out[#out + 1] = 0
  else
    out[#out + 1] = 1
    if earliest == nil or due < earliest then
      earliest = due
    end
  end
end
if earliest ~= nil and (first == nil or earliest < first) then
  redis.call('PUBLISH', KEYS[4], string.format('%d', earliest))
end
return out
