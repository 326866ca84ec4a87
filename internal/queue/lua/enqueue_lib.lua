-- Enqueue library: the one source of the enqueue logic. The queue's own
-- enqueue script is this file followed by enqueue.lua, and another package may
-- prepend it to its own script (queue.EnqueueLua) to enqueue atomically with
-- its own writes, passing the keys from (*Queue).EnqueueKeys in its KEYS.
--
-- queue_enqueue(ready, data, meta, wake, id, typ, payload, due_ms, max_attempts, now_ms)
--   ready, data, meta, wake: the four keys of EnqueueKeys, in that order
--     (wake is the pub/sub channel of the queue; it shares the queue's hash tag)
--   id, typ: non-empty strings; payload: string (may be empty)
--   due_ms, now_ms: Unix milliseconds; a due time before now_ms runs at now_ms
--   max_attempts: integer >= 1
-- Returns 1 when the task was added, 0 when a task with this id already exists
-- (pending, in flight or dead: nothing is changed). Publishes the due time on
-- wake when the new task became the earliest one, so a sleeping consumer
-- re-plans; a busy queue (earlier tasks waiting) publishes nothing.
-- Raises an error, before any write, when an argument is malformed.
--
-- queue_enqueue_nowake(ready, data, meta, id, typ, payload, due_ms, max_attempts, now_ms)
--   Same, without the publish, for a script that enqueues several tasks and
--   publishes once itself: returns 0 duplicate, 1 added, 2 added and now the
--   earliest task of the queue (publish the due time on wake if any call
--   returned 2).
--
-- queue_add(ready, data, meta, id, typ, payload, due_ms, max_attempts, now_ms)
--   The core: returns false for a duplicate, or the due time (ms, >= now_ms)
--   of the added task. queue_earliest(ready) is the due time of the queue's
--   first task, or nil. A batch calls queue_earliest once and queue_add per
--   task, saving a read per task.
--
-- queue_add_all(ready, data, meta, wake, args, i, j, now_ms)
--   queue_add for each group of five values of args[i..j] (id, typ, payload,
--   due_ms, max_attempts), with one publish for the batch; returns 1 or 0
--   per task.

local function queue_earliest(ready)
  local first = redis.call('ZRANGE', ready, 0, 0, 'WITHSCORES')
  if first[2] then
    return tonumber(first[2])
  end
  return nil
end

local function queue_add(ready, data, meta, id, typ, payload, due_ms, max_attempts, now_ms)
  local due = tonumber(due_ms)
  local maxa = tonumber(max_attempts)
  local now = tonumber(now_ms)
  if type(id) ~= 'string' or id == '' or type(typ) ~= 'string' or typ == ''
      or type(payload) ~= 'string' or not due or not now or not maxa or maxa < 1 then
    error('queue_enqueue: invalid arguments')
  end
  if due < now then
    due = now
  end
  -- attempts|token|max_attempts|enqueued_ms|type
  local m = '0||' .. string.format('%d', maxa) .. '|' .. string.format('%d', now) .. '|' .. typ
  if redis.call('HSETNX', meta, id, m) == 0 then
    return false
  end
  redis.call('HSET', data, id, payload)
  redis.call('ZADD', ready, due, id)
  return due
end

local function queue_enqueue_nowake(ready, data, meta, id, typ, payload, due_ms, max_attempts, now_ms)
  local first = queue_earliest(ready)
  local due = queue_add(ready, data, meta, id, typ, payload, due_ms, max_attempts, now_ms)
  if not due then
    return 0
  end
  if first == nil or due < first then
    return 2
  end
  return 1
end

local function queue_enqueue(ready, data, meta, wake, id, typ, payload, due_ms, max_attempts, now_ms)
  local r = queue_enqueue_nowake(ready, data, meta, id, typ, payload, due_ms, max_attempts, now_ms)
  if r == 2 then
    local due = math.max(tonumber(due_ms), tonumber(now_ms))
    redis.call('PUBLISH', wake, string.format('%d', due))
    return 1
  end
  return r
end

-- queue_add_all adds the tasks in args[i..j], groups of five (id, type,
-- payload, due_ms, max_attempts), at now_ms, and publishes once on wake
-- the earliest new due time when a new task became the queue's earliest.
-- Returns one integer per task: 1 added, 0 duplicate id (left untouched).
local function queue_add_all(ready, data, meta, wake, args, i, j, now_ms)
  local first = queue_earliest(ready)
  local out, earliest = {}, nil
  for k = i, j, 5 do
    local due = queue_add(ready, data, meta, args[k], args[k + 1], args[k + 2], args[k + 3], args[k + 4], now_ms)
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
    redis.call('PUBLISH', wake, string.format('%d', earliest))
  end
  return out
end
