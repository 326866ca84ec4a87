-- Enqueue a batch of tasks (prefixed by enqueue_lib.lua).
-- KEYS: ready, data, meta, wake (the EnqueueKeys order)
-- ARGV[1]   now_ms
-- ARGV[2..] groups of 5: id, type, payload, due_ms, max_attempts
-- Returns one integer per task: 1 added, 0 duplicate id (left untouched).
-- Publishes the earliest new due time on wake once when a new task became the
-- earliest of the queue.
local now = ARGV[1]
local out = {}
local wake = nil
for i = 2, #ARGV, 5 do
  local r = queue_enqueue_nowake(KEYS[1], KEYS[2], KEYS[3], ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], now)
  if r == 2 then
    local due = math.max(tonumber(ARGV[i + 3]), tonumber(now))
    if wake == nil or due < wake then
      wake = due
    end
    r = 1
  end
  out[#out + 1] = r
end
if wake ~= nil then
  redis.call('PUBLISH', KEYS[4], string.format('%d', wake))
end
return out
