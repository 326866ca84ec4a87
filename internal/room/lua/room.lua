-- room.lua: a shopper joins a SKU's waiting room (or looks at their place
-- in it), and the room admits the tickets whose turn has come, in one
-- atomic step; or, with no shopper ('tick'), the room only admits and
-- says where it stands. Any instance runs it for any shopper: the room is
-- this state; what a process keeps (room.Board) is a copy it can rebuild.
--
-- KEYS[1] meta HASH: seq (tickets issued), cursor (tickets admitted, in
--         line order), credit (admissions earned and not yet made), last
--         (Unix ms of the last admission), drawing (the pre-queue is
--         closed), drawn (the pre-queue is in the line), epoch (the first
--         ticket issued: names this state, so that a copy of it taken
--         before the state was lost and made again is told from it),
--         joined, admitted, expired (counters)
-- KEYS[2] who HASH: shopper -> ticket
-- KEYS[3] pre ZSET: ticket -> seq, the pre-queue (random mode, joined
--         before starts_at), until the draw puts it in the line
-- KEYS[4] line ZSET: ticket -> place; the draw puts the pre-queue at 1..n,
--         later joiners at 1e12 + seq (fifo: every ticket at seq)
-- KEYS[5] passes ZSET: ticket -> expiry (Unix ms), valid unused passes;
--         the buy script removes a pass it spends
-- KEYS[6] expired SET: tickets whose pass expired unused
-- KEYS[7] the SKU's stock hash (its 'left')
-- ARGV[1] 'join', 'peek' or 'tick'
-- ARGV[2] shopper id ('tick': none)
-- ARGV[3] the ticket to issue if the shopper has none (join)
-- ARGV[4] now, Unix ms
-- ARGV[5] starts_at, Unix ms
-- ARGV[6] mode: 'random' or 'fifo'
-- ARGV[7] admissions per second
-- ARGV[8] pass lifetime, ms
-- ARGV[9] overbook: valid unused passes stay at most left * overbook
-- ARGV[10] Unix ms at which the room's keys expire
-- Returns {code, status, place, ahead, ticket, pass expiry, left,
--          admitted now, expired now, tickets waiting in line, issued,
--          cursor, epoch, final}
--   'tick': {2, '', 0, 0, '', 0, left, admitted now, expired now,
--          tickets waiting, 0, cursor, epoch, final}
--   issued  1 when this call issued the shopper's ticket
--   cursor  tickets admitted so far: a ticket at place p is admitted once
--           p <= cursor
--   epoch   the room's epoch ('' before its first ticket)
--   final   1 when the places in the line are final (fifo, or the
--           pre-queue drawn): a place read then never changes
--   code    1 done; 2 tick done; -1 the shopper has no ticket (peek); -2 the draw is
--           due (random mode, starts_at passed, pre-queue not drawn yet);
--           -3 the SKU's stock hash is missing (its state is lost)
--   status  'waiting' (place 0: not drawn yet), 'admitted', 'sold_out'
--           (waiting, and no unit left), 'spent' (admitted, pass used),
--           'expired' (admitted, pass expired unused)
local meta, who, pre, line, passes, expired, stock = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local op, user = ARGV[1], ARGV[2]
local now, starts = tonumber(ARGV[4]), tonumber(ARGV[5])
local mode, rate, ttl, overbook = ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])

local ticket = false
if op ~= 'tick' then
  ticket = redis.call('HGET', who, user)
end
local issued = 0
if not ticket and op ~= 'tick' then
  if op ~= 'join' then
    return {-1}
  end
  ticket = ARGV[3]
  issued = 1
  redis.call('HSETNX', meta, 'epoch', ticket)
  local seq = redis.call('HINCRBY', meta, 'seq', 1)
  redis.call('HSET', who, user, ticket)
  local into = line
  if mode == 'fifo' then
    redis.call('ZADD', line, seq, ticket)
  elseif now < starts and redis.call('HEXISTS', meta, 'drawing') == 0 then
    redis.call('ZADD', pre, seq, ticket)
    into = pre
  else
    redis.call('ZADD', line, 1e12 + seq, ticket)
  end
  redis.call('HINCRBY', meta, 'joined', 1)
  redis.call('PEXPIREAT', meta, ARGV[10])
  redis.call('PEXPIREAT', who, ARGV[10])
  redis.call('PEXPIREAT', into, ARGV[10])
end

local left, admitted, gone = -1, 0, 0
if now >= starts then
  if mode ~= 'fifo' and redis.call('HGET', meta, 'drawn') ~= '1' then
    return {-2}
  end
  left = tonumber(redis.call('HGET', stock, 'left'))
  if not left then
    return {-3}
  end
  local old = redis.call('ZRANGEBYSCORE', passes, '-inf', now)
  gone = #old
  if gone > 0 then
    for i = 1, gone do
      redis.call('SADD', expired, old[i])
    end
    redis.call('ZREMRANGEBYSCORE', passes, '-inf', now)
    redis.call('HINCRBY', meta, 'expired', gone)
    redis.call('PEXPIREAT', expired, ARGV[10])
  end
  local m = redis.call('HMGET', meta, 'cursor', 'credit', 'last')
  local cursor, credit, last = tonumber(m[1]) or 0, tonumber(m[2]) or 0, tonumber(m[3]) or starts
  -- Earned since the last admission (never negative: instances' clocks
  -- differ a little), at most one second's worth in hand.
  credit = math.min(credit + math.max(now - math.max(last, starts), 0) * rate / 1000, math.max(rate, 1))
  local cap = math.floor(left * overbook) - redis.call('ZCARD', passes)
  local k = math.min(math.floor(credit), cap, redis.call('ZCARD', line) - cursor)
  if k > 0 then
    local turn = redis.call('ZRANGE', line, cursor, cursor + k - 1)
    for i = 1, #turn do
      redis.call('ZADD', passes, now + ttl, turn[i])
    end
    cursor = cursor + k
    credit = credit - k
    admitted = k
    redis.call('HINCRBY', meta, 'admitted', k)
    redis.call('PEXPIREAT', passes, ARGV[10])
  end
  redis.call('HSET', meta, 'cursor', cursor, 'credit', string.format('%.6f', credit), 'last', math.max(now, last))
  redis.call('PEXPIREAT', meta, ARGV[10])
end

local m = redis.call('HMGET', meta, 'cursor', 'epoch', 'drawn')
local cursor, epoch = tonumber(m[1]) or 0, m[2] or ''
local final = 0
if mode == 'fifo' or m[3] == '1' then
  final = 1
end
local waiting = redis.call('ZCARD', line) - cursor
if mode ~= 'fifo' and m[3] ~= '1' then
  waiting = waiting + redis.call('ZCARD', pre)
end
if op == 'tick' then
  return {2, '', 0, 0, '', 0, left, admitted, gone, waiting, 0, cursor, epoch, final}
end

local status, place, ahead, expiry = 'waiting', 0, 0, 0
local rank = redis.call('ZRANK', line, ticket)
if rank then
  place = rank + 1
  if rank < cursor then
    expiry = tonumber(redis.call('ZSCORE', passes, ticket)) or 0
    if expiry > now then
      status = 'admitted'
    elseif redis.call('SISMEMBER', expired, ticket) == 1 then
      status = 'expired'
    else
      status = 'spent'
    end
  else
    ahead = rank - cursor
    if left == 0 then
      status = 'sold_out'
    end
  end
end
return {1, status, place, ahead, ticket, expiry, left, admitted, gone, waiting, issued, cursor, epoch, final}
