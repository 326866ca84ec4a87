-- room.lua: shoppers join a SKU's waiting room (or look at their place in
-- it), and the room admits the tickets whose turn has come, in one atomic
-- step; with no shopper ('tick') the room only admits and says where it
-- stands. One call serves one shopper or a batch of them (the joins an
-- instance combined). Any instance runs it for any shopper: the room is
-- this state; what a process keeps (room.Board) is a copy it can rebuild.
--
-- KEYS[1] meta HASH: seq (tickets issued), cursor (tickets admitted, in
--         line order), credit (admissions earned and not yet made), last
--         (Unix ms of the last admission), drawing (the pre-queue is
--         closed), drawn (the pre-queue is in the line), epoch (the first
--         ticket issued: names this state, so that a copy of it taken
--         before the state was lost and made again is told from it),
--         since (Unix ms of that first ticket: every admission of this
--         state is at or after it), joined, admitted, expired (counters)
-- KEYS[2] who HASH: shopper -> ticket
-- KEYS[3] pre ZSET: ticket -> seq, the pre-queue (random mode, joined
--         before starts_at), until the draw puts it in the line
-- KEYS[4] line ZSET: ticket -> place; the draw puts the pre-queue at 1..n,
--         later joiners at 1e12 + seq (fifo: every ticket at seq)
-- KEYS[5] passes ZSET: ticket -> expiry (Unix ms) of every pass given,
--         used or not, until that expiry: where the passes that expire
--         are found
-- KEYS[6] expired SET: tickets whose pass expired unused
-- KEYS[7] the SKU's stock hash (its 'left')
-- KEYS[8] valid HASH: ticket -> expiry (Unix ms), the valid unused passes;
--         the buy script removes a pass it spends (one HDEL, cheaper than
--         a ZREM in a large set, on the buy's path)
-- KEYS[9] control HASH: the operator's controls (lua/control.lua): state
--         'paused' (no admission), 'open' (buys need no pass; admission
--         goes on) or 'closed' (no ticket issued, no admission; waiting
--         tickets are closed), absent: running; rate, the admissions per
--         second overriding ARGV[5]
-- KEYS[10] pow ZSET: challenge id -> its expiry (Unix ms), the proofs of
--         work that issued a ticket, each kept until its challenge expires
-- KEYS[11] prio ZSET: ticket -> pseq, the tickets of priority codes
--         (lua/code.lua issues them: meta's pseq counts them), admitted
--         before any ticket of the line; meta's pcursor counts those
--         admitted, in this order
-- KEYS[12] prioat HASH: ticket -> the line's cursor when the priority
--         ticket was admitted (its place among the line's admissions, as
--         the published draw tells it)
-- KEYS[13..] the stock hashes of the other SKUs of a drop, whose room
--         this is (KEYS[7] is its first SKU's): the room admits to the
--         units left of them all
-- ARGV[1] 'join', 'peek' or 'tick'
-- ARGV[2] now, Unix ms
-- ARGV[3] starts_at, Unix ms
-- ARGV[4] mode: 'random' or 'fifo'
-- ARGV[5] admissions per second (unless the controls override it)
-- ARGV[6] pass lifetime, ms
-- ARGV[7] overbook: valid unused passes stay at most left * overbook
-- ARGV[8] Unix ms at which the room's keys expire
-- ARGV[9..] fours: a shopper id; the ticket to issue if they have none
--         (join; '' for a look); the proof of work: '' none needed, '-'
--         needed and none given (the shopper is answered only if they
--         hold a ticket), or the id of the challenge the shopper solved
--         (checked by the caller: used once); and that challenge's expiry
--         (Unix ms). 'tick': none. Joins are issued in the order given.
-- Returns {code, left, admitted now, expired now, tickets waiting in line,
--          cursor, epoch, final, state, rate, priority tickets waiting,
--          then per shopper: found, status, place, ahead, ticket, pass
--          expiry, issued, priority}
--   code    1 done; -2 the draw is due (random mode, starts_at passed,
--           pre-queue not drawn yet); -3 a stock hash is missing (its
--           SKU's state is lost), followed by its index in KEYS. Nothing
--           is written with -2 or -3.
--   cursor  tickets admitted so far: a ticket at place p is admitted once
--           p <= cursor
--   epoch   the room's epoch ('' before its first ticket)
--   final   1 when the places in the line are final (fifo, or the
--           pre-queue drawn): a place read then never changes
--   state   the controls' state: 'running', 'paused', 'open' or 'closed'
--   rate    the admissions per second in force, a string
--   found   1; 0 the shopper has no ticket (a look, or a join without
--           the proof of work it needs); 2 the proof of work of a
--           shopper with no ticket issued one already: the rest is empty
--   status  'waiting' (place 0: not drawn yet), 'admitted', 'sold_out'
--           (waiting, and no unit left), 'spent' (admitted, pass used),
--           'expired' (admitted, pass expired unused), 'room_closed'
--           (waiting in a closed room)
--   issued  1 when this call issued the shopper's ticket
--   priority 1 when the ticket is a priority code's: its place and ahead
--           are in the priority line; a line ticket's ahead counts the
--           priority tickets waiting
local meta, who, pre, line, passes, expired, stock, valid, pow = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[10]
local prio = KEYS[11]
local op = ARGV[1]
local now, starts = tonumber(ARGV[2]), tonumber(ARGV[3])
local mode, rate, ttl, overbook = ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local keep = ARGV[8]
local ctl = redis.call('HMGET', KEYS[9], 'state', 'rate')
local state = ctl[1] or 'running'
rate = tonumber(ctl[2]) or rate
if state == 'closed' then
  op = 'peek' -- no ticket issued
end

-- Checked before anything is written, so that a call answered -2 or -3
-- issued no ticket: the caller draws (or restores) and calls again.
local left = -1
if now >= starts then
  if mode ~= 'fifo' and redis.call('HGET', meta, 'drawn') ~= '1' then
    return {-2}
  end
  left = tonumber(redis.call('HGET', stock, 'left'))
  if not left then
    return {-3, 7}
  end
  -- A drop's room admits to the units left of all its SKUs.
  for i = 13, #KEYS do
    local n = tonumber(redis.call('HGET', KEYS[i], 'left'))
    if not n then
      return {-3, i}
    end
    left = left + n
  end
end

local tickets, issued, reused = {}, {}, {}
local joined = 0
local seq = nil -- read at the first ticket issued, written once at the end
local pre_open = nil
local pruned = false
for i = 9, #ARGV, 4 do
  local user = ARGV[i]
  local ticket = nil
  -- A join issues a ticket to a shopper who has none if it needs no proof
  -- of work, or with one not used before, which it records.
  local proof, may = ARGV[i + 2], op == 'join'
  if may and proof ~= '' and redis.call('HEXISTS', who, user) == 0 then
    if proof == '-' then
      may = false
    else
      if not pruned then
        -- A minute past their expiry, so that an instance whose clock is
        -- behind still finds them.
        redis.call('ZREMRANGEBYSCORE', pow, '-inf', now - 60000)
        pruned = true
      end
      if redis.call('ZADD', pow, 'NX', ARGV[i + 3], proof) == 0 then
        may = false
        reused[user] = 2
      else
        redis.call('PEXPIREAT', pow, keep)
      end
    end
  end
  if may and redis.call('HSETNX', who, user, ARGV[i + 1]) == 1 then
    ticket = ARGV[i + 1]
    issued[user] = 1
    if not seq then
      if redis.call('HSETNX', meta, 'epoch', ticket) == 1 then
        redis.call('HSET', meta, 'since', ARGV[2])
      end
      seq = tonumber(redis.call('HGET', meta, 'seq')) or 0
      pre_open = now < starts and redis.call('HEXISTS', meta, 'drawing') == 0
    end
    seq = seq + 1
    if mode == 'fifo' then
      redis.call('ZADD', line, seq, ticket)
    elseif pre_open then
      redis.call('ZADD', pre, seq, ticket)
    else
      redis.call('ZADD', line, 1e12 + seq, ticket)
    end
    joined = joined + 1
  else
    ticket = redis.call('HGET', who, user)
  end
  tickets[user] = ticket
end
if joined > 0 then
  redis.call('HSET', meta, 'seq', seq)
  redis.call('HINCRBY', meta, 'joined', joined)
  redis.call('PEXPIREAT', meta, keep)
  redis.call('PEXPIREAT', who, keep)
  redis.call('PEXPIREAT', pre, keep)
  redis.call('PEXPIREAT', line, keep)
end

local admitted, gone = 0, 0
if now >= starts then
  -- A pass past its expiry expired unused if it is still valid; one not
  -- valid any more was spent.
  local old = redis.call('ZRANGEBYSCORE', passes, '-inf', now)
  if #old > 0 then
    for i = 1, #old do
      if redis.call('HDEL', valid, old[i]) == 1 then
        redis.call('SADD', expired, old[i])
        gone = gone + 1
      end
    end
    redis.call('ZREMRANGEBYSCORE', passes, '-inf', now)
    if gone > 0 then
      redis.call('HINCRBY', meta, 'expired', gone)
      redis.call('PEXPIREAT', expired, keep)
    end
  end
  local m = redis.call('HMGET', meta, 'cursor', 'credit', 'last', 'pseq', 'pcursor')
  local cursor, credit, last = tonumber(m[1]) or 0, tonumber(m[2]) or 0, tonumber(m[3]) or starts
  local pwait, pcursor = (tonumber(m[4]) or 0) - (tonumber(m[5]) or 0), tonumber(m[5]) or 0
  -- Earned since the last admission (never negative: instances' clocks
  -- differ a little), at most one second's worth in hand; nothing while
  -- admission is stopped.
  credit = math.min(credit + math.max(now - math.max(last, starts), 0) * rate / 1000, math.max(rate, 1))
  local cap = math.floor(left * overbook) - redis.call('HLEN', valid)
  local k = math.min(math.floor(credit), cap, redis.call('ZCARD', line) - cursor + pwait)
  if state == 'paused' or state == 'closed' then
    credit, k = 0, 0
  end
  if k > 0 then
    -- The priority tickets first, each recording the line's cursor.
    local kp = math.min(k, pwait)
    if kp > 0 then
      local turn = redis.call('ZRANGE', prio, pcursor, pcursor + kp - 1)
      for i = 1, #turn do
        redis.call('ZADD', passes, now + ttl, turn[i])
        redis.call('HSET', valid, turn[i], now + ttl)
        redis.call('HSET', KEYS[12], turn[i], cursor)
      end
      redis.call('HINCRBY', meta, 'pcursor', kp)
      redis.call('PEXPIREAT', KEYS[12], keep)
    end
    if k > kp then
      local turn = redis.call('ZRANGE', line, cursor, cursor + k - kp - 1)
      for i = 1, #turn do
        redis.call('ZADD', passes, now + ttl, turn[i])
        redis.call('HSET', valid, turn[i], now + ttl)
      end
      cursor = cursor + k - kp
    end
    credit = credit - k
    admitted = k
    redis.call('HINCRBY', meta, 'admitted', k)
    redis.call('PEXPIREAT', passes, keep)
    redis.call('PEXPIREAT', valid, keep)
  end
  redis.call('HSET', meta, 'cursor', cursor, 'credit', string.format('%.6f', credit), 'last', math.max(now, last))
  redis.call('PEXPIREAT', meta, keep)
end

local m = redis.call('HMGET', meta, 'cursor', 'epoch', 'drawn', 'pseq', 'pcursor')
local cursor, epoch = tonumber(m[1]) or 0, m[2] or ''
local pseq, pcursor = tonumber(m[4]) or 0, tonumber(m[5]) or 0
local final = 0
if mode == 'fifo' or m[3] == '1' then
  final = 1
end
local waiting = redis.call('ZCARD', line) - cursor + pseq - pcursor
if mode ~= 'fifo' and m[3] ~= '1' then
  waiting = waiting + redis.call('ZCARD', pre)
end

local out = {1, left, admitted, gone, waiting, cursor, epoch, final, state, string.format('%.17g', rate), pseq - pcursor}
local o = #out
for i = 9, #ARGV, 4 do
  local user = ARGV[i]
  local ticket = tickets[user]
  if not ticket then
    out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5], out[o + 6], out[o + 7], out[o + 8] = reused[user] or 0, '', 0, 0, '', 0, 0, 0
  else
    local status, place, ahead, expiry, priority = 'waiting', 0, 0, 0, 0
    -- A line ticket has the priority tickets waiting ahead of it too.
    local rank, before, extra = redis.call('ZRANK', line, ticket), cursor, pseq - pcursor
    if not rank and pseq > 0 then
      rank, before, extra = redis.call('ZRANK', prio, ticket), pcursor, 0
      if rank then
        priority = 1
      end
    end
    if rank then
      place = rank + 1
      if rank < before then
        expiry = tonumber(redis.call('HGET', valid, ticket)) or 0
        if expiry > now then
          status = 'admitted'
        elseif redis.call('SISMEMBER', expired, ticket) == 1 then
          status = 'expired'
        else
          status = 'spent'
        end
      else
        ahead = rank - before + extra
        if left == 0 then
          status = 'sold_out'
        end
      end
    end
    if state == 'closed' and (status == 'waiting' or status == 'sold_out') then
      status = 'room_closed'
    end
    local new = issued[user] or 0
    issued[user] = nil -- a shopper named twice in a batch is issued once
    out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5], out[o + 6], out[o + 7], out[o + 8] = 1, status, place, ahead, ticket, expiry, new, priority
  end
  o = o + 8
end
return out
