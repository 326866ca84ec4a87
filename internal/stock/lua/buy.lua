-- buy.lua: takes stock for a batch of buy requests of one SKU and enqueues
-- one order task holding every accepted order of the batch, in one atomic
-- step: no crash can leave stock taken without its order, or an order
-- without its stock. The queue's enqueue library (queue.EnqueueLua) is
-- prepended to this file.
--
-- KEYS[1..4] the SKU's order queue: ready, data, meta, wake (queue.EnqueueKeys)
-- KEYS[5]    stock hash: total, left, limit, fence, ends (Unix ms at which
--            the sale ends; 0 or absent: no end kept in Redis), void_to
--            (batches made at or before this Unix ms may not run: see
--            outcome.lua)
-- KEYS[6]    buyers hash: user id -> units bought
-- KEYS[7]    the SKU lock's key (read only when ARGV[1] is not empty)
-- KEYS[8]    pause marker, set while Redis state is being rebuilt
-- KEYS[9..]  request-id keys (string -> order id) of the requests that have
--            one, and rate keys (string: the shopper's theoretical arrival
--            time, microseconds, with a TTL) of the requests when a rate
--            limit is set
-- ARGV[1]    token of the SKU lock the caller holds, '' without a lock
-- ARGV[2]    fencing number of that acquisition, 0 without a lock
-- ARGV[3]    now, Unix milliseconds: when the batch was made
-- ARGV[4]    max attempts of an order task
-- ARGV[5]    lifetime of a request-id key, milliseconds
-- ARGV[6]    order task type
-- ARGV[7]    per-shopper rate limit: microseconds between requests at the
--            sustained rate (0: no limit)
-- ARGV[8]    per-shopper rate limit: burst allowance, microseconds
-- ARGV[9]    id of the batch's order task (every order id of the batch
--            names it: internal/orderid)
-- ARGV[10]   number of requests n
-- ARGV[11]   index in KEYS of the SKU's waiting room valid passes (HASH
--            ticket -> expiry, Unix ms), 0 when no request carries a pass;
--            followed by 8 values per request: user id, qty, order id,
--            index in KEYS of its request-id key (0 when it has none),
--            index in KEYS of its rate key (0 when there is no limit; a
--            request whose pass is valid is not charged: the pass lets in
--            one buy and the room paces its shoppers), the order's JSON
--            object, the expiry (Unix ms) of the pass the request spends
--            (0: no pass; the pass's own, as signed, which is its value)
--            and its ticket
-- The task's payload is the JSON array of the accepted orders' objects.
-- Returns {status, left, code1, id1, code2, id2, ...}
--   status  1 done; -1 stock hash missing (Redis state lost: rebuild it);
--           -2 the lock is not held with ARGV[1]; -3 ARGV[2] is older than a
--           fence already used (a stale holder); -4 paused; -5 the batch's
--           task exists already; -6 the batch was made at or before void_to
--           (left is then void_to: make the batch again, later). Nothing is
--           written unless status is 1.
--   left    units left after the batch
--   code    1 accepted (id = new order id), 2 replay of a request id (id =
--           the order it got the first time), 3 sold out, 4 limit exceeded,
--           5 rate limited (id = microseconds until the shopper may retry),
--           6 the sale has ended (ARGV[3] is at or past ends), 7 the
--           request's pass is spent or expired (a waiting room's pass is
--           spent by the buy it lets in, with the units)
-- In that order, ended first after replays: a replay is answered first and
-- is never charged to the rate limit; ended and sold-out answers are not
-- charged either. A request whose pass is refused is charged, and answered
-- 5 rather than 7 past the budget: a spent pass still passes the
-- instance's signature check until its expiry. A request for more than is
-- left is answered 4 rather than 3 when the shopper's units would pass the
-- limit too.
local ready, data, meta, wake = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local stock, buyers, lockkey, paused = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local token, fence, now = ARGV[1], tonumber(ARGV[2]), ARGV[3]

if token ~= '' and redis.call('GET', lockkey) ~= token then
  return {-2, 0}
end
if redis.call('EXISTS', paused) == 1 then
  return {-4, 0}
end
local st = redis.call('HMGET', stock, 'left', 'limit', 'fence', 'ends', 'void_to')
if not st[1] then
  return {-1, 0}
end
local void_to = tonumber(st[5]) or 0
if tonumber(now) <= void_to then
  return {-6, void_to}
end
local left = tonumber(st[1])
local limit = tonumber(st[2]) or 0
local ends = tonumber(st[4]) or 0
local ended = ends > 0 and tonumber(now) >= ends
local batch, n = ARGV[9], tonumber(ARGV[10])
if redis.call('HEXISTS', meta, batch) == 1 then
  return {-5, left}
end
if fence > 0 then
  local seen = tonumber(st[3]) or 0
  if fence < seen then
    return {-3, left}
  end
  if fence > seen then
    redis.call('HSET', stock, 'fence', fence)
  end
end

-- live_as_stock gives key, when it has no TTL, the stock hash's remaining
-- lifetime: what a buy creates ends with the sale's state.
local function live_as_stock(key)
  if redis.call('PTTL', key) == -1 then
    local ttl = redis.call('PTTL', stock)
    if ttl > 0 then
      redis.call('PEXPIRE', key, ttl)
    end
  end
end

-- unspend puts back a pass spent by a request then refused, as it was:
-- nothing outside this script sees it gone. Removing a hash's last field
-- removes the hash, so a hash made again lives as the stock hash does (the
-- room's keys end with the sale too).
local function unspend(passes, exp, ticket)
  if not passes then
    return
  end
  redis.call('HSET', passes, ticket, exp)
  live_as_stock(passes)
end

local interval, burst = tonumber(ARGV[7]), tonumber(ARGV[8])
local now_us = tonumber(now) * 1000
local out = {1, 0}
local taken = 0
local accepted = {}
local passkey = nil
if ARGV[11] ~= '0' then
  passkey = KEYS[tonumber(ARGV[11])]
end
for i = 0, n - 1 do
  local b = 12 + i * 8
  local user, qty, oid = ARGV[b], tonumber(ARGV[b + 1]), ARGV[b + 2]
  local passes, pexp, ticket = nil, ARGV[b + 6], ARGV[b + 7]
  if pexp ~= '0' then
    passes = passkey
  end
  local ridkey = nil
  if ARGV[b + 3] ~= '0' then
    ridkey = KEYS[tonumber(ARGV[b + 3])]
  end
  local prior = ridkey and redis.call('GET', ridkey)
  -- A pass is spent here, by the one HDEL that says it was valid and
  -- unused; a refusal below puts it back. A request it lets in is not
  -- charged, one whose pass is refused is.
  local spent, refused = false, false
  if passes and not prior and not ended then
    spent = tonumber(pexp) > tonumber(now) and redis.call('HDEL', passes, ticket) == 1
    refused = not spent
  end
  local wait = 0
  if not prior and not ended and not spent and (qty <= left or refused) and ARGV[b + 4] ~= '0' then
    -- GCRA: the shopper's theoretical arrival time moves one interval per
    -- request; a request is refused while that would put it more than the
    -- burst allowance ahead of now. A shopper whose time is not ahead of now
    -- (the usual one in a flash sale) is always within the budget, so the
    -- next time is written and the old one read in one call, and corrected
    -- only when the old one was ahead.
    local ratekey = KEYS[tonumber(ARGV[b + 4])]
    local nxt = now_us + interval
    local old = tonumber(redis.call('SET', ratekey, string.format('%d', nxt), 'PX', math.ceil(interval / 1000) + 1, 'GET') or '0')
    if old > now_us then
      nxt = old + interval
      wait = nxt - burst - now_us
      local keep = old
      if wait <= 0 then
        keep = nxt
      end
      redis.call('SET', ratekey, string.format('%d', keep), 'PX', math.ceil((keep - now_us) / 1000) + 1)
    end
  end
  if prior then
    out[#out + 1] = 2
    out[#out + 1] = prior
  elseif ended then
    out[#out + 1] = 6
    out[#out + 1] = ''
  elseif refused then
    if wait > 0 then
      out[#out + 1] = 5
      out[#out + 1] = string.format('%d', wait)
    else
      out[#out + 1] = 7
      out[#out + 1] = ''
    end
  elseif qty > left then
    -- A shopper whose units would pass the limit anyway is told so: a SKU
    -- split into buckets moves units to a bucket short of them, and must
    -- not move them for a request that could not take them.
    if limit > 0 and (tonumber(redis.call('HGET', buyers, user)) or 0) + qty > limit then
      out[#out + 1] = 4
    else
      out[#out + 1] = 3
    end
    out[#out + 1] = ''
    unspend(passes, pexp, ticket)
  elseif wait > 0 then
    out[#out + 1] = 5
    out[#out + 1] = string.format('%d', wait)
    unspend(passes, pexp, ticket)
  else
    -- Counted first and taken back when over the limit: an accepted order
    -- (the usual case) costs one call.
    local has = redis.call('HINCRBY', buyers, user, qty)
    if limit > 0 and has > limit then
      if redis.call('HINCRBY', buyers, user, -qty) <= 0 then
        redis.call('HDEL', buyers, user)
      end
      out[#out + 1] = 4
      out[#out + 1] = ''
      unspend(passes, pexp, ticket)
    else
      accepted[#accepted + 1] = ARGV[b + 5]
      left = left - qty
      taken = taken + qty
      if ridkey then
        redis.call('SET', ridkey, oid, 'PX', ARGV[5])
      end
      out[#out + 1] = 1
      out[#out + 1] = oid
    end
  end
end
if taken > 0 then
  local first = queue_earliest(ready)
  local due = queue_add(ready, data, meta, batch, ARGV[6], '[' .. table.concat(accepted, ',') .. ']', now, ARGV[4], now)
  if first == nil or due < first then
    redis.call('PUBLISH', wake, now)
  end
  redis.call('HINCRBY', stock, 'left', -taken)
  -- The buyers hash lives as long as the stock hash (a finished sale's
  -- state expires); it is created by the first buyer, without a TTL.
  live_as_stock(buyers)
end
out[2] = left
return out
