-- Enqueue a batch of tasks (prefixed by enqueue_lib.lua).
-- KEYS: ready, data, meta, wake (the EnqueueKeys order)
-- ARGV[1]   now_ms
-- ARGV[2..] groups of 5: id, type, payload, due_ms, max_attempts
-- Returns one integer per task: 1 added, 0 duplicate id (left untouched).
-- Publishes once on wake, the earliest new due time, when a new task became
-- the earliest of the queue.
return queue_add_all(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV, 2, #ARGV, ARGV[1])
