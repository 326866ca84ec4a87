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
--         state is at or after it), joined, admitted, expired (counters),
--         due (Unix ms: no pass in passes expires before it, so that a
--         call before it looks for none)
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
-- ARGV[9] the values given per shopper: 2, or 4 when a join needs a proof
--         of work
-- ARGV[10..] per shopper: their id; the ticket to issue if they have none
--         (join; '' for a look); with 4, then the proof of work: '' none
--         needed, '-' needed and none given (the shopper is answered only
--         if they hold a ticket), or the id of the challenge the shopper
--         solved (checked by the caller: used once); and that challenge's
--         expiry (Unix ms). 'tick': none. Joins are issued in the order
--         given.
-- Returns {code, left, admitted now, expired now, tickets waiting in line,
--          cursor, epoch, final, state, rate, priority tickets waiting,
--          then per shopper: status, place, ahead, pass expiry, ticket}
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
--   status  a number: 0 the shopper has no ticket (a look, or a join
--           without the proof of work it needs: the rest is 0); 1 the
--           proof of work of a shopper with no ticket issued one already
--           (the rest is 0); 2 waiting (place 0: not drawn yet); 3
--           admitted; 4 sold out (waiting, and no unit left); 5 spent
--           (admitted, pass used); 6 expired (admitted, pass expired
--           unused); 7 room closed (waiting in a closed room); plus 8
--           when this call issued the shopper's ticket, and 16 when the
--           ticket is a priority code's: its place and ahead are in the
--           priority line (a line ticket's ahead counts the priority
--           tickets waiting)
--   ticket  the shopper's ticket; 0 when this call issued it (the caller
--           knows it: the one it gave) or they have none
local meta, who, pre, line, passes, expired, stock, valid, pow = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[10]
local prio = KEYS[11]
local op = ARGV[1]
local now, starts = tonumber(ARGV[2]), tonumber(ARGV[3])
local mode, rate, ttl, overbook = ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local keep = ARGV[8]
local step = tonumber(ARGV[9])
local ctl = redis.call('HMGET', KEYS[9], 'state', 'rate')
local state = ctl[1] or 'running'
rate = tonumber(ctl[2]) or rate
if state == 'closed' then
  op = 'peek' -- no ticket issued
end
-- Every field of meta this call reads, read once: nothing else writes
-- them while it runs.
local m = redis.call('HMGET', meta, 'seq', 'epoch', 'drawn', 'drawing', 'cursor', 'credit', 'last', 'pseq', 'pcursor',
  'joined', 'admitted', 'expired', 'due')
local drawn = m[3] == '1'
local set = {} -- meta's fields to write, in one HSET at the end

-- Checked before anything is written, so that a call answered -2 or -3
-- issued no ticket: the caller draws (or restores) and calls again.
local left = -1
if now >= starts then
  if mode ~= 'fifo' and not drawn then
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

-- The shoppers' tickets, in one read; those issued now, in one write to
-- who and one to the line (or the pre-queue).
local users = {}
for i = 10, #ARGV, step do
  users[#users + 1] = ARGV[i]
end
local held = {}
if #users > 0 then
  held = redis.call('HMGET', who, unpack(users))
end
local tickets, issued, reused = {}, {}, {}
local joined, epoch = 0, m[2]
local seq, into, base = nil, line, 0
local newWho, newLine = {}, {}
local pruned = false
for j = 1, #users do
  local user, a = users[j], 10 + (j - 1) * step
  local ticket = tickets[user] or held[j]
  if not ticket and op == 'join' then
    -- A ticket is issued to a shopper who has none if it needs no proof
    -- of work, or with one not used before, which it records.
    local may, proof = true, ''
    if step == 4 then
      proof = ARGV[a + 2]
    end
    if proof == '-' then
      may = false
    elseif proof ~= '' then
      if not pruned then
        -- A minute past their expiry, so that an instance whose clock is
        -- behind still finds them.
        redis.call('ZREMRANGEBYSCORE', pow, '-inf', now - 60000)
        pruned = true
      end
      if redis.call('ZADD', pow, 'NX', ARGV[a + 3], proof) == 0 then
        may = false
        reused[user] = 1
      else
        redis.call('PEXPIREAT', pow, keep)
      end
    end
    if may then
      ticket = ARGV[a + 1]
      issued[user] = joined + 1
      if not seq then
        if not epoch then
          epoch = ticket
          set[#set + 1], set[#set + 2], set[#set + 3], set[#set + 4] = 'epoch', ticket, 'since', ARGV[2]
        end
        seq = tonumber(m[1]) or 0
        if mode ~= 'fifo' then
          if now < starts and not m[4] then
            into = pre
          else
            base = 1e12
          end
        end
      end
      seq = seq + 1
      joined = joined + 1
      newWho[2 * joined - 1], newWho[2 * joined] = user, ticket
      newLine[2 * joined - 1], newLine[2 * joined] = base + seq, ticket
    end
  end
  tickets[user] = ticket
end
-- Tickets issued into the line after its last one take its last places,
-- in order: their places need no ZRANK each.
local atEnd = false
if joined > 0 then
  redis.call('HSET', who, unpack(newWho))
  if into == line then
    local top = redis.call('ZRANGE', line, -1, -1, 'WITHSCORES')
    atEnd = not top[2] or tonumber(top[2]) < newLine[1]
  end
  redis.call('ZADD', into, unpack(newLine))
  set[#set + 1], set[#set + 2] = 'seq', seq
  set[#set + 1], set[#set + 2] = 'joined', (tonumber(m[10]) or 0) + joined
  redis.call('PEXPIREAT', who, keep)
  redis.call('PEXPIREAT', into, keep)
end

local cursor, pseq, pcursor = tonumber(m[5]) or 0, tonumber(m[8]) or 0, tonumber(m[9]) or 0
local inLine = nil -- ZCARD line, read once
local admitted, gone = 0, 0
if now >= starts then
  -- A pass past its expiry expired unused if it is still valid; one not
  -- valid any more was spent. due is the earliest expiry of a pass in
  -- passes: none expired before it.
  local due = tonumber(m[13])
  if not due or now >= due then
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
        set[#set + 1], set[#set + 2] = 'expired', (tonumber(m[12]) or 0) + gone
        redis.call('PEXPIREAT', expired, keep)
      end
    end
    local first = redis.call('ZRANGE', passes, 0, 0, 'WITHSCORES')
    due = tonumber(first[2]) or now + ttl
    set[#set + 1], set[#set + 2] = 'due', due
  end
  local credit, last = tonumber(m[6]) or 0, tonumber(m[7]) or starts
  local pwait = pseq - pcursor
  -- Earned since the last admission (never negative: instances' clocks
  -- differ a little), at most one second's worth in hand; nothing while
  -- admission is stopped.
  credit = math.min(credit + math.max(now - math.max(last, starts), 0) * rate / 1000, math.max(rate, 1))
  local cap = math.floor(left * overbook) - redis.call('HLEN', valid)
  inLine = redis.call('ZCARD', line)
  local k = math.min(math.floor(credit), cap, inLine - cursor + pwait)
  if state == 'paused' or state == 'closed' then
    credit, k = 0, 0
  end
  if k > 0 then
    -- The priority tickets first, each recording the line's cursor.
    local exp = now + ttl
    local given, gv = {}, {}
    local kp = math.min(k, pwait)
    if kp > 0 then
      local turn = redis.call('ZRANGE', prio, pcursor, pcursor + kp - 1)
      local at = {}
      for i = 1, #turn do
        given[#given + 1], given[#given + 2] = exp, turn[i]
        gv[#gv + 1], gv[#gv + 2] = turn[i], exp
        at[#at + 1], at[#at + 2] = turn[i], cursor
      end
      if #at > 0 then
        redis.call('HSET', KEYS[12], unpack(at))
      end
      pcursor = pcursor + kp
      set[#set + 1], set[#set + 2] = 'pcursor', pcursor
      redis.call('PEXPIREAT', KEYS[12], keep)
    end
    if k > kp then
      local turn = redis.call('ZRANGE', line, cursor, cursor + k - kp - 1)
      for i = 1, #turn do
        given[#given + 1], given[#given + 2] = exp, turn[i]
        gv[#gv + 1], gv[#gv + 2] = turn[i], exp
      end
      cursor = cursor + k - kp
    end
    if #given > 0 then
      redis.call('ZADD', passes, unpack(given))
      redis.call('HSET', valid, unpack(gv))
      due = math.min(due, exp)
      set[#set + 1], set[#set + 2] = 'due', due
    end
    credit = credit - k
    admitted = k
    set[#set + 1], set[#set + 2] = 'admitted', (tonumber(m[11]) or 0) + k
    redis.call('PEXPIREAT', passes, keep)
    redis.call('PEXPIREAT', valid, keep)
  end
  set[#set + 1], set[#set + 2] = 'cursor', cursor
  set[#set + 1], set[#set + 2] = 'credit', string.format('%.6f', credit)
  set[#set + 1], set[#set + 2] = 'last', math.max(now, last)
end
if #set > 0 then
  redis.call('HSET', meta, unpack(set))
  redis.call('PEXPIREAT', meta, keep)
end

local final = 0
if mode == 'fifo' or drawn then
  final = 1
end
inLine = inLine or redis.call('ZCARD', line)
local waiting = inLine - cursor + pseq - pcursor
if final == 0 then
  waiting = waiting + redis.call('ZCARD', pre)
end

local out = {1, left, admitted, gone, waiting, cursor, epoch or '', final, state, string.format('%.17g', rate), pseq - pcursor}
local o = #out
for j = 1, #users do
  local user = users[j]
  local ticket = tickets[user]
  if not ticket then
    out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5] = reused[user] or 0, 0, 0, 0, 0
  else
    local status, place, ahead, expiry, priority = 2, 0, 0, 0, 0
    -- A line ticket has the priority tickets waiting ahead of it too.
    local rank, before, extra = nil, cursor, pseq - pcursor
    if atEnd and issued[user] then
      rank = inLine - joined + issued[user] - 1
    else
      rank = redis.call('ZRANK', line, ticket)
    end
    if not rank and pseq > 0 then
      rank, before, extra = redis.call('ZRANK', prio, ticket), pcursor, 0
      if rank then
        priority = 16
      end
    end
    if rank then
      place = rank + 1
      if rank < before then
        expiry = tonumber(redis.call('HGET', valid, ticket)) or 0
        if expiry > now then
          status = 3
        elseif redis.call('SISMEMBER', expired, ticket) == 1 then
          status = 6
        else
          status = 5
        end
      else
        ahead = rank - before + extra
        if left == 0 then
          status = 4
        end
      end
    end
    if state == 'closed' and (status == 2 or status == 4) then
      status = 7
    end
    -- A shopper named twice in a batch is issued once: the caller knows
    -- the ticket it issued, and is told the others.
    if issued[user] then
      issued[user] = nil
      out[o + 1], out[o + 5] = status + 8 + priority, 0
    else
      out[o + 1], out[o + 5] = status + priority, ticket
    end
    out[o + 2], out[o + 3], out[o + 4] = place, ahead, expiry
  end
  o = o + 5
end
return out
