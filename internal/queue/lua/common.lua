-- Helpers shared by the queue's scripts (prepended to each, except the
-- enqueue library). Every script receives the same KEYS:
--   KEYS[1] ready    ZSET id -> due time (ms); pending tasks, due or delayed
--   KEYS[2] inflight ZSET id -> lease deadline (ms); claimed tasks
--   KEYS[3] data     HASH id -> payload
--   KEYS[4] meta     HASH id -> "attempts|token|max_attempts|enqueued_ms|type"
--   KEYS[5] dead     ZSET id -> time of death (ms); dead letters
--   KEYS[6] err      HASH id -> last error text
--   KEYS[7] wake     pub/sub channel (not stored), same hash tag

local function parse_meta(s)
  if not s then
    return nil
  end
  local a, tok, m, e, typ = string.match(s, '^(%d+)|([^|]*)|(%d+)|(%d+)|(.*)$')
  if not a then
    return nil
  end
  return { attempts = tonumber(a), max = tonumber(m), enq = e, token = tok, typ = typ }
end

-- claim_meta is the claim's hot path: the same meta with one more attempt
-- and the new token, without parsing the rest. nil if s is malformed.
local function claim_meta(s, token)
  if not s then
    return nil
  end
  local p1 = string.find(s, '|', 1, true)
  local p2 = p1 and string.find(s, '|', p1 + 1, true)
  local a = p2 and tonumber(string.sub(s, 1, p1 - 1))
  if not a then
    return nil
  end
  return string.format('%d', a + 1) .. '|' .. token .. string.sub(s, p2)
end

-- held returns the meta of id if the task is in flight under the lease
-- token tok, else nil (a stale token: the lease ended and the task moved on).
local function held(tok, id)
  local m = parse_meta(redis.call('HGET', KEYS[4], id))
  if m and m.token ~= '' and m.token == tok and redis.call('ZSCORE', KEYS[2], id) then
    return m
  end
  return nil
end

-- unlease ends the leases of the tasks gone = { id, ... } and writes their
-- new metas, newm = { id, meta, ... }.
local function unlease(gone, newm)
  redis.call('ZREM', KEYS[2], unpack(gone))
  redis.call('HSET', KEYS[4], unpack(newm))
end

-- members returns the members of a ZRANGE ... WITHSCORES reply
-- { member, score, member, score, ... }.
local function members(res)
  local ids = {}
  for i = 1, #res / 2 do
    ids[i] = res[2 * i - 1]
  end
  return ids
end

local function format_meta(m)
  return string.format('%d', m.attempts) .. '|' .. m.token .. '|' .. string.format('%d', m.max) .. '|' .. m.enq .. '|' .. m.typ
end

-- Drops every trace of the ids from the data, meta and err hashes.
local function forget(ids)
  if #ids == 0 then
    return
  end
  redis.call('HDEL', KEYS[3], unpack(ids))
  redis.call('HDEL', KEYS[4], unpack(ids))
  redis.call('HDEL', KEYS[6], unpack(ids))
end

-- Keeps at most cap dead letters (cap <= 0: no limit) by removing the oldest,
-- at most 500 per call so the script stays bounded. Returns the removed ids
-- so the caller can report them.
local function trim_dead(cap)
  if cap <= 0 then
    return {}
  end
  local excess = redis.call('ZCARD', KEYS[5]) - cap
  if excess <= 0 then
    return {}
  end
  if excess > 500 then
    excess = 500
  end
  local ids = redis.call('ZRANGE', KEYS[5], 0, excess - 1)
  redis.call('ZREMRANGEBYRANK', KEYS[5], 0, excess - 1)
  forget(ids)
  return ids
end

-- Returns in-flight tasks whose lease expired before now to ready (score now),
-- at most limit of them, keeping their attempt count; a task that used all its
-- attempts becomes a dead letter instead. Returns recovered, dead.
local function recover(now, limit)
  if limit <= 0 then
    return 0, 0
  end
  local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, limit)
  if #ids == 0 then
    return 0, 0
  end
  local metas = redis.call('HMGET', KEYS[4], unpack(ids))
  local back, newm, orphans = {}, {}, {}
  local nrec, ndead = 0, 0
  for i, id in ipairs(ids) do
    local m = parse_meta(metas[i])
    if not m then
      orphans[#orphans + 1] = id
    else
      m.token = ''
      newm[#newm + 1] = id
      newm[#newm + 1] = format_meta(m)
      if m.attempts >= m.max then
        redis.call('ZADD', KEYS[5], now, id)
        redis.call('HSET', KEYS[6], id, 'lease expired on attempt ' .. string.format('%d', m.attempts))
        ndead = ndead + 1
      else
        back[#back + 1] = now
        back[#back + 1] = id
        nrec = nrec + 1
      end
    end
  end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, #ids - 1)
  if #back > 0 then
    redis.call('ZADD', KEYS[1], unpack(back))
  end
  if #newm > 0 then
    redis.call('HSET', KEYS[4], unpack(newm))
  end
  forget(orphans)
  return nrec, ndead
end

-- The earliest time anything in the queue needs attention: the first pending
-- task's due time or the first lease deadline, whichever is sooner; -1 if none.
local function next_wake()
  local r = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local f = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  local best = -1
  if r[2] then
    best = tonumber(r[2])
  end
  if f[2] and (best < 0 or tonumber(f[2]) < best) then
    best = tonumber(f[2])
  end
  return string.format('%d', best)
end
