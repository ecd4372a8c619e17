#!lua name=holdfast_v1
--
-- holdfast Redis Functions library, version 1.
--
-- Bump the version in the library name AND in every function name (hf<N>_)
-- whenever any function body changes: function names are global across
-- libraries, and during a rolling deploy the old daemons keep calling theirs.
-- The daemon keeps HF_LIBRARY_VERSION in daemon/src/scripts.h in step; a unit
-- test checks both agree.
--
-- Everything above the first register_function line is also sent, per
-- function, as a plain EVAL/EVALSHA script when Functions are not available,
-- so keep all logic in local functions here.
--
-- Every function touches only the keys it is passed, is O(N) in them, and
-- returns codes that tell apart granted / held by another / not held /
-- confirmed (values shared with enum hf_script_code in scripts.h).

local GRANTED, HELD_BY_ANOTHER, NOT_HELD, CONFIRMED = 1, 2, 3, 4
local CONFIRMED_PREFIX = '!confirmed:'

local function is_confirmed(value)
  return string.sub(value, 1, #CONFIRMED_PREFIX) == CONFIRMED_PREFIX
end

-- The state of one hold key as seen by `token` (which may be '' for nobody).
local function state_of(value, token)
  if not value then return NOT_HELD end
  if value == token then return GRANTED end
  if is_confirmed(value) then return CONFIRMED end
  return HELD_BY_ANOTHER
end

-- Redis' clock in microseconds; inside a batch, read once for all its calls.
local function clock_us(batch)
  if batch then return batch.clock end
  local now = redis.call('TIME')
  return tonumber(now[1]) * 1000000 + tonumber(now[2])
end

-- The partition's next fence (a decimal string). It never goes backwards,
-- even if the counter was lost in a failover: it is at least Redis' clock in
-- microseconds. Inside a batch the counters are read once and written once,
-- at the batch's end (batch, below).
local function next_fence(counter, clock, batch)
  local previous
  if batch and batch.fences[counter] then
    previous = batch.fences[counter]
  else
    previous = tonumber(redis.call('GET', counter)) or 0
  end
  local fence = string.format('%.0f', math.max(previous + 1, clock))
  if batch then
    if not batch.fences[counter] then batch.counters[#batch.counters + 1] = counter end
    batch.fences[counter] = tonumber(fence)
  else
    redis.call('SET', counter, fence)
  end
  return fence
end

-- Hold, all or nothing.
-- KEYS[1] = fence counter of the partition, KEYS[2..] = hold keys.
-- ARGV[1] = random part of the token, ARGV[2] = TTL in ms.
-- batch: set when called by batch() (one clock, fences written once).
-- -> {GRANTED, fence} | {HELD_BY_ANOTHER|CONFIRMED, index of the id (1-based)}
local function hold(keys, args, batch)
  for i = 2, #keys do
    local value = redis.call('GET', keys[i])
    if value then
      if is_confirmed(value) then return {CONFIRMED, i - 1} end
      return {HELD_BY_ANOTHER, i - 1}
    end
  end
  local fence = next_fence(keys[1], clock_us(batch), batch)
  local token = fence .. '.' .. args[1]
  for i = 2, #keys do
    redis.call('SET', keys[i], token, 'PX', args[2])
  end
  return {GRANTED, fence}
end

-- Extend, owner-checked; all or nothing.
-- KEYS = hold keys. ARGV[1] = token, ARGV[2] = TTL in ms.
-- -> {GRANTED} | {state, index}
local function extend(keys, args)
  for i = 1, #keys do
    local state = state_of(redis.call('GET', keys[i]), args[1])
    if state ~= GRANTED then return {state, i} end
  end
  for i = 1, #keys do
    redis.call('PEXPIRE', keys[i], args[2])
  end
  return {GRANTED}
end

-- Release every key this token holds; leave the others untouched.
-- KEYS = hold keys. ARGV[1] = token.
-- -> {GRANTED, released} | {first other state, released, its index}
local function release(keys, args)
  local released, first_state, first_index = 0, GRANTED, 0
  for i = 1, #keys do
    local state = state_of(redis.call('GET', keys[i]), args[1])
    if state == GRANTED then
      redis.call('DEL', keys[i])
      released = released + 1
    elseif first_state == GRANTED then
      first_state, first_index = state, i
    end
  end
  if first_state == GRANTED then return {GRANTED, released} end
  return {first_state, released, first_index}
end

-- Diagnostic view. KEYS = hold keys. ARGV[1] = token or ''.
-- -> flat {state, pttl, owned} per key; state NOT_HELD means free.
local function status(keys, args)
  local out = {}
  for i = 1, #keys do
    local value = redis.call('GET', keys[i])
    if not value then
      out[#out + 1] = NOT_HELD
      out[#out + 1] = 0
      out[#out + 1] = 0
    else
      out[#out + 1] = is_confirmed(value) and CONFIRMED or HELD_BY_ANOTHER
      out[#out + 1] = redis.call('PTTL', keys[i])
      out[#out + 1] = (args[1] ~= '' and value == args[1]) and 1 or 0
    end
  end
  return out
end

-- Confirm step 1: every key still holds exactly this token -> stretch the
-- TTL to the confirm window and return the fence; otherwise change nothing.
-- KEYS = hold keys. ARGV[1] = token, ARGV[2] = window in ms.
-- -> {GRANTED, fence} | {state, index}
local function confirm_check(keys, args)
  for i = 1, #keys do
    local state = state_of(redis.call('GET', keys[i]), args[1])
    if state ~= GRANTED then return {state, i} end
  end
  for i = 1, #keys do
    redis.call('PEXPIRE', keys[i], args[2])
  end
  return {GRANTED, string.match(args[1], '^(%d+)%.')}
end

-- After a committed confirm: swap each key this token still owns for the
-- confirmed marker (ARGV[2] > 0: marker TTL in ms) or delete it (ARGV[2] = 0).
-- KEYS = hold keys. ARGV[1] = token. -> number of keys swapped or deleted.
local function mark_confirmed(keys, args)
  local fence = string.match(args[1], '^(%d+)%.')
  local ttl = tonumber(args[2])
  local done = 0
  for i = 1, #keys do
    if redis.call('GET', keys[i]) == args[1] then
      if ttl > 0 then
        redis.call('SET', keys[i], CONFIRMED_PREFIX .. fence, 'PX', ttl)
      else
        redis.call('DEL', keys[i])
      end
      done = done + 1
    end
  end
  return done
end

-- After a committed cancel: drop the confirmed markers so the resources can
-- be held again. KEYS = hold keys. -> number of markers removed.
local function cancel_clear(keys, args)
  local done = 0
  for i = 1, #keys do
    local value = redis.call('GET', keys[i])
    if value and is_confirmed(value) then
      redis.call('DEL', keys[i])
      done = done + 1
    end
  end
  return done
end

-- ---- Pools (namespaces of kind "pools") ----
--
-- A pool sells units: capacity and sold are mirrored from PostgreSQL (the
-- system of record), live holds are kept here. Per pool, two keys inside the
-- partition's hash tag:
--   hf:{<ns>:<partition>}:#pool:<pool>  HASH  sold, held (units in live
--        holds), own (1: the pool has its own capacity, in cap; 0: it follows
--        the partition's default), ver (PostgreSQL's version of the row), and
--        one field per live hold: <token> -> units
--   hf:{<ns>:<partition>}:#pexp:<pool>  ZSET  <token> scored by its expiry
--        (ms, Redis' clock)
-- and per partition hf:{<ns>:<partition>}:#pooldefault  HASH  cap, ver.
-- Every function first drops the holds whose expiry has passed and gives
-- their units back (pool_trim), so no sweeper is needed and none can lag;
-- the cost is O(expired holds), each trimmed once.
-- Codes beyond the shared ones: 5 = the mirror lacks this pool's capacity
-- (load it from PostgreSQL, then call again), 6 = the token holds another
-- number of units in this pool than the call says.
local POOL_MISS, POOL_COUNT_MISMATCH = 5, 6
-- Pool keys live this long past their last hold's expiry (the mirror is
-- loaded again from PostgreSQL when it has gone).
local POOL_KEEP_MS = 86400000

local function pool_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), t
end

local function pool_trim(hash, exp, now)
  local gone = redis.call('ZRANGEBYSCORE', exp, '-inf', now)
  if #gone == 0 then return end
  local units = 0
  for i = 1, #gone do
    units = units + (tonumber(redis.call('HGET', hash, gone[i])) or 0)
    redis.call('HDEL', hash, gone[i])
  end
  redis.call('ZREMRANGEBYSCORE', exp, '-inf', now)
  local held = tonumber(redis.call('HGET', hash, 'held')) or 0
  redis.call('HSET', hash, 'held', math.max(held - units, 0))
end

-- Capacity, sold and held units of a pool; nil when the mirror lacks them.
local function pool_numbers(hash, default)
  local f = redis.call('HMGET', hash, 'sold', 'own', 'cap', 'held')
  if not f[1] then return nil end
  local cap
  if f[2] == '1' then
    cap = tonumber(f[3])
  else
    cap = tonumber(redis.call('HGET', default, 'cap'))
  end
  if not cap then return nil end
  return cap, tonumber(f[1]), math.max(tonumber(f[4]) or 0, 0)
end

-- Keep a pool's keys until a day after its last hold expires.
local function pool_keep(hash, exp, now)
  local last = redis.call('ZRANGE', exp, -1, -1, 'WITHSCORES')
  local until_ms = now
  if #last == 2 then until_ms = math.max(now, tonumber(last[2])) end
  redis.call('PEXPIREAT', hash, string.format('%.0f', until_ms + POOL_KEEP_MS))
  if #last == 2 then
    redis.call('PEXPIREAT', exp, string.format('%.0f', until_ms + POOL_KEEP_MS))
  end
end

-- Mirror PostgreSQL's state of a pool (own, cap, sold, ver as strings; ver
-- '-1': nothing to mirror) unless the mirror already has that version or a
-- newer one. A pool whose hash had gone also loses its holds (they cannot
-- be counted any more; their tokens no longer hold anything).
local function pool_apply(hash, exp, own, cap, sold, ver, now)
  local v = tonumber(ver)
  if v < 0 then return end
  local f = redis.call('HMGET', hash, 'sold', 'ver')
  if f[1] and tonumber(f[2]) and tonumber(f[2]) >= v then return end
  if not f[1] then
    redis.call('DEL', hash, exp)
    redis.call('HSET', hash, 'held', 0)
  end
  redis.call('HSET', hash, 'sold', sold, 'own', own, 'ver', ver)
  if own == '1' then redis.call('HSET', hash, 'cap', cap) else redis.call('HDEL', hash, 'cap') end
  pool_keep(hash, exp, now)
end

local function pool_apply_default(default, cap, ver, now)
  local v = tonumber(ver)
  if v < 0 then return end
  local have = tonumber(redis.call('HGET', default, 'ver'))
  if not have or have < v then redis.call('HSET', default, 'cap', cap, 'ver', ver) end
  redis.call('PEXPIREAT', default, string.format('%.0f', now + POOL_KEEP_MS))
end

-- Hold units of 1..N pools, all or nothing.
-- KEYS[1] = fence counter, KEYS[2] = the partition's default, then per pool
-- its hash and its holds. ARGV[1] = random part of the token, ARGV[2] = TTL
-- in ms, ARGV[3..] = units per pool.
-- -> {GRANTED, fence} | {POOL_MISS, index}
--    | {CONFIRMED, index, units left unsold} | {HELD_BY_ANOTHER, index, units free}
local function pool_hold(keys, args, batch)
  local now, time = pool_now()
  local n = (#keys - 2) / 2
  for i = 1, n do
    local hash, exp = keys[2 * i + 1], keys[2 * i + 2]
    pool_trim(hash, exp, now)
    local cap, sold, held = pool_numbers(hash, keys[2])
    if not cap then return {POOL_MISS, i} end
    local want = tonumber(args[i + 2])
    if cap - sold < want then return {CONFIRMED, i, math.max(cap - sold, 0)} end
    if cap - sold - held < want then return {HELD_BY_ANOTHER, i, math.max(cap - sold - held, 0)} end
  end
  local fence = next_fence(keys[1], tonumber(time[1]) * 1000000 + tonumber(time[2]), batch)
  local token = fence .. '.' .. args[1]
  local expires = now + tonumber(args[2])
  for i = 1, n do
    local hash, exp = keys[2 * i + 1], keys[2 * i + 2]
    redis.call('HSET', hash, token, args[i + 2])
    redis.call('HINCRBY', hash, 'held', args[i + 2])
    redis.call('ZADD', exp, expires, token)
    pool_keep(hash, exp, now)
  end
  return {GRANTED, fence}
end

-- Extend a pool hold, owner-checked; all or nothing.
-- KEYS = per pool its hash and its holds. ARGV[1] = token, ARGV[2] = TTL in ms.
-- -> {GRANTED} | {NOT_HELD, index}
local function pool_extend(keys, args)
  local now = pool_now()
  for i = 1, #keys / 2 do
    pool_trim(keys[2 * i - 1], keys[2 * i], now)
    if not redis.call('HGET', keys[2 * i - 1], args[1]) then return {NOT_HELD, i} end
  end
  for i = 1, #keys / 2 do
    redis.call('ZADD', keys[2 * i], 'XX', now + tonumber(args[2]), args[1])
    pool_keep(keys[2 * i - 1], keys[2 * i], now)
  end
  return {GRANTED}
end

-- Give back this token's units of every pool it holds; the rest untouched.
-- KEYS = per pool its hash and its holds. ARGV[1] = token.
-- -> {GRANTED, units released} | {NOT_HELD, units released, index}
local function pool_release(keys, args)
  local now = pool_now()
  local released, first = 0, 0
  for i = 1, #keys / 2 do
    local hash, exp = keys[2 * i - 1], keys[2 * i]
    pool_trim(hash, exp, now)
    local units = tonumber(redis.call('HGET', hash, args[1]))
    if units then
      redis.call('HDEL', hash, args[1])
      redis.call('HINCRBY', hash, 'held', -units)
      redis.call('ZREM', exp, args[1])
      released = released + units
    elseif first == 0 then
      first = i
    end
  end
  if first == 0 then return {GRANTED, released} end
  return {NOT_HELD, released, first}
end

-- Diagnostic view. KEYS[1] = the partition's default, then per pool its
-- hash and its holds. ARGV[1] = token or ''.
-- -> {GRANTED, then per pool: capacity, sold, held, units of the token,
--     ms left of the token's hold} | {POOL_MISS, index}
local function pool_status(keys, args)
  local now = pool_now()
  local out = {GRANTED}
  for i = 1, (#keys - 1) / 2 do
    local hash, exp = keys[2 * i], keys[2 * i + 1]
    pool_trim(hash, exp, now)
    local cap, sold, held = pool_numbers(hash, keys[1])
    if not cap then return {POOL_MISS, i} end
    local owned, ttl = 0, 0
    if args[1] ~= '' then
      owned = tonumber(redis.call('HGET', hash, args[1])) or 0
      local expires = tonumber(redis.call('ZSCORE', exp, args[1]))
      if owned > 0 and expires then ttl = math.max(expires - now, 0) end
    end
    out[#out + 1] = cap
    out[#out + 1] = sold
    out[#out + 1] = held
    out[#out + 1] = owned
    out[#out + 1] = ttl
  end
  return out
end

-- Confirm step 1 for units: the token holds exactly these units in every
-- pool -> its expiry becomes now + the confirm window, the fence is
-- returned; otherwise nothing changes.
-- KEYS = per pool its hash and its holds. ARGV[1] = token, ARGV[2] = window
-- in ms, ARGV[3..] = units per pool.
-- -> {GRANTED, fence} | {NOT_HELD, index} | {POOL_COUNT_MISMATCH, index, units held}
local function pool_confirm_check(keys, args)
  local now = pool_now()
  for i = 1, #keys / 2 do
    pool_trim(keys[2 * i - 1], keys[2 * i], now)
    local units = tonumber(redis.call('HGET', keys[2 * i - 1], args[1]))
    if not units then return {NOT_HELD, i} end
    if units ~= tonumber(args[i + 2]) then return {POOL_COUNT_MISMATCH, i, units} end
  end
  for i = 1, #keys / 2 do
    redis.call('ZADD', keys[2 * i], 'XX', now + tonumber(args[2]), args[1])
    pool_keep(keys[2 * i - 1], keys[2 * i], now)
  end
  return {GRANTED, string.match(args[1], '^(%d+)%.')}
end

-- After a committed Confirm (or its replay): the token's units leave the
-- holds, and the pools' state from PostgreSQL goes into the mirror.
-- KEYS[1] = the partition's default, then per pool its hash and its holds.
-- ARGV[1] = token ('' for none), ARGV[2], ARGV[3] = the default's capacity
-- and version, then per pool own, capacity, sold, version (version '-1':
-- leave that part of the mirror alone).
-- -> number of pools whose units this token still held.
local function pool_mark_sold(keys, args)
  local now = pool_now()
  local done = 0
  for i = 1, (#keys - 1) / 2 do
    local hash, exp = keys[2 * i], keys[2 * i + 1]
    pool_trim(hash, exp, now)
    local units = args[1] ~= '' and tonumber(redis.call('HGET', hash, args[1]))
    if units then
      redis.call('HDEL', hash, args[1])
      redis.call('HINCRBY', hash, 'held', -units)
      redis.call('ZREM', exp, args[1])
      done = done + 1
    end
    local a = 4 * i
    pool_apply(hash, exp, args[a], args[a + 1], args[a + 2], args[a + 3], now)
  end
  pool_apply_default(keys[1], args[2], args[3], now)
  return done
end

-- Session holds (docs/sessions.md): many holds in one call, one call per
-- renewal tick of a connection (or per slot in a cluster).
-- KEYS = the hold keys of every hold, one hold after the other.
-- ARGV = per hold: token, number of its keys, TTL in ms.
-- A hold whose keys all still hold its token gets its TTL topped up to
-- ARGV's TTL (never shortened: a Confirm's window or a longer Extend
-- stays). Any other hold is lost: whatever of it this token still holds
-- is deleted (a hold is all or nothing).
-- -> flat {state, index} per hold (index: 1-based within the hold, 0 when
-- GRANTED).
local function session_renew(keys, args)
  local out, k = {}, 0
  for h = 1, #args, 3 do
    local token, n, ttl = args[h], tonumber(args[h + 1]), tonumber(args[h + 2])
    local state, index = GRANTED, 0
    for i = 1, n do
      local s = state_of(redis.call('GET', keys[k + i]), token)
      if s ~= GRANTED then
        state, index = s, i
        break
      end
    end
    for i = 1, n do
      if state == GRANTED then
        if redis.call('PTTL', keys[k + i]) < ttl then
          redis.call('PEXPIRE', keys[k + i], ttl)
        end
      elseif redis.call('GET', keys[k + i]) == token then
        redis.call('DEL', keys[k + i])
      end
    end
    out[#out + 1] = state
    out[#out + 1] = index
    k = k + n
  end
  return out
end

-- Release many holds at once (their connection closed): owner-checked.
-- KEYS = the hold keys of every hold. ARGV = per hold: token, its number of
-- keys. -> per hold, the number of keys released.
local function session_release(keys, args)
  local out, k = {}, 0
  for h = 1, #args, 2 do
    local token, n = args[h], tonumber(args[h + 1])
    local released = 0
    for i = k + 1, k + n do
      if redis.call('GET', keys[i]) == token then
        redis.call('DEL', keys[i])
        released = released + 1
      end
    end
    out[#out + 1] = released
    k = k + n
  end
  return out
end

-- ---- Waiting in line (docs/waiting.md) ----
--
-- A hold with a wait queues behind the holder. Per id a line
--   hf:{<ns>:<partition>}:#line:<id>  ZSET  ticket -> arrival number
-- and per partition
--   hf:{<ns>:<partition>}:#waiters    HASH  ticket -> its lease's end (ms,
--        Redis' clock)
-- A ticket whose lease has ended is dead: whoever meets it at the head of a
-- line drops it, so no sweeper is needed. A ticket enters all its lines in
-- one call, at their tails, so any two tickets stand in the same order in
-- every line they share: the heads can never block each other (no
-- deadlock); a ticket that was dead re-enters every line at the tail.
-- Wake-ups are PUBLISHed on WAIT_CHANNEL, the message being the ticket.
local WAIT_CHANNEL = 'holdfast:wake'

-- The live head of a line (dead heads dropped), or nil.
local function line_head(line, waiters, now, ticket)
  while true do
    local head = redis.call('ZRANGE', line, 0, 0)[1]
    if not head or head == ticket then return head end
    local lease = tonumber(redis.call('HGET', waiters, head))
    if lease and lease > now then return head end
    redis.call('ZREM', line, head)
    if lease then redis.call('HDEL', waiters, head) end
  end
end

-- A key lives at least ms more.
local function keep_key(key, ms)
  if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, ms) end
end

-- Take the ticket out of its lines; with `wake`, each line it headed wakes
-- its new head (not after a grant: the next waits for the new holder).
local function line_leave(waiters, lines, ticket, now, wake)
  redis.call('HDEL', waiters, ticket)
  local woken = {}
  for i = 1, #lines do
    local rank = redis.call('ZRANK', lines[i], ticket)
    if rank then
      redis.call('ZREM', lines[i], ticket)
      if rank == 0 and wake then
        local head = line_head(lines[i], waiters, now, '')
        if head and not woken[head] then
          woken[head] = true
          redis.call('PUBLISH', WAIT_CHANNEL, head)
        end
      end
    end
  end
end

-- Join (or stay in) every line at its tail, lease renewed.
local function line_join(waiters, lines, ticket, now, lease)
  local alive = (tonumber(redis.call('HGET', waiters, ticket)) or 0) > now
  for i = 1, #lines do
    if not alive then redis.call('ZREM', lines[i], ticket) end
    if not alive or not redis.call('ZSCORE', lines[i], ticket) then
      local tail = redis.call('ZRANGE', lines[i], -1, -1, 'WITHSCORES')
      redis.call('ZADD', lines[i], (tonumber(tail[2]) or 0) + 1, ticket)
    end
    keep_key(lines[i], lease)
  end
  redis.call('HSET', waiters, ticket, now + lease)
  keep_key(waiters, lease)
end

-- The ticket heads every line (or the line is empty): 1, 0; else 0 and the
-- index of the first line where another waiter is ahead.
local function line_first(waiters, lines, ticket, now)
  local first, blocked = 1, 0
  for i = 1, #lines do
    local head = line_head(lines[i], waiters, now, ticket)
    if head and head ~= ticket then
      first = 0
      if blocked == 0 then blocked = i end
    end
  end
  return first, blocked
end

-- Hold with a wait, all or nothing: granted only when every id is free and
-- the ticket heads every line (or the line is empty); otherwise the ticket
-- stays in (or joins) every line for ARGV[4] ms more.
-- KEYS[1] = fence counter, then the n hold keys, the partition's waiters,
-- the n lines. ARGV[1] = random part of the token, ARGV[2] = TTL in ms,
-- ARGV[3] = ticket, ARGV[4] = lease in ms.
-- -> {GRANTED, fence} | {CONFIRMED, index}
--    | {HELD_BY_ANOTHER, index, ms until the holders' keys expire (-1: not
--       held, only queued), 1 when the ticket heads every line}
local function hold_wait(keys, args)
  local n = (#keys - 2) / 2
  local waiters, ticket, lease = keys[n + 2], args[3], tonumber(args[4])
  local now = pool_now()
  local lines = {}
  for i = 1, n do lines[i] = keys[n + 2 + i] end
  for i = 1, n do
    local value = redis.call('GET', keys[1 + i])
    if value and is_confirmed(value) then
      line_leave(waiters, lines, ticket, now, false)
      return {CONFIRMED, i}
    end
  end
  local first, blocked = line_first(waiters, lines, ticket, now)
  local pttl = -1
  for i = 1, n do
    local left = redis.call('PTTL', keys[1 + i])
    if left ~= -2 then
      if blocked == 0 then blocked = i end
      if left > pttl then pttl = left end
    end
  end
  if blocked == 0 then
    local fence = hold({unpack(keys, 1, n + 1)}, args)[2]
    line_leave(waiters, lines, ticket, now, false)
    return {GRANTED, fence}
  end
  line_join(waiters, lines, ticket, now, lease)
  return {HELD_BY_ANOTHER, blocked, pttl, first}
end

-- Hold units with a wait: pool_hold, tried only by the head of every line
-- (its pools' lines); a grant wakes the next head (units may be left).
-- KEYS = pool_hold's (fence, default, per pool hash and holds), then the
-- partition's waiters, one line per pool. ARGV = pool_hold's (random, TTL,
-- units per pool), then ticket, lease in ms.
-- -> pool_hold's answer, or {HELD_BY_ANOTHER, index, ms until the next hold
--    of that pool expires (-1: only queued), 1 when the ticket heads every
--    line, units free (-1: only queued)}
local function pool_hold_wait(keys, args)
  local p = (#keys - 3) / 3
  local waiters = keys[3 + 2 * p]
  local ticket, lease = args[#args - 1], tonumber(args[#args])
  local now = pool_now()
  local lines = {}
  for i = 1, p do lines[i] = keys[3 + 2 * p + i] end
  local first, blocked = line_first(waiters, lines, ticket, now)
  local pttl, free = -1, -1
  if first == 1 then
    local r = pool_hold({unpack(keys, 1, 2 + 2 * p)}, {unpack(args, 1, #args - 2)})
    if r[1] == GRANTED or r[1] == CONFIRMED then
      line_leave(waiters, lines, ticket, now, true)
      return r
    end
    if r[1] ~= HELD_BY_ANOTHER then return r end
    blocked, free = r[2], r[3]
    local e = redis.call('ZRANGE', keys[2 + 2 * blocked], 0, 0, 'WITHSCORES')
    if e[2] then pttl = math.max(tonumber(e[2]) - now, 0) end
  end
  line_join(waiters, lines, ticket, now, lease)
  return {HELD_BY_ANOTHER, blocked, pttl, first, free}
end

-- A waiter gives up (its wait ran out, its client left).
-- KEYS[1] = the partition's waiters, KEYS[2..] = its lines. ARGV[1] = ticket.
-- -> 1
local function wait_leave(keys, args)
  local lines = {}
  for i = 2, #keys do lines[#lines + 1] = keys[i] end
  line_leave(keys[1], lines, args[1], pool_now(), true)
  return 1
end

-- Resources were freed (ARGV[1] = '0': wake the head of each line) or sold
-- (ARGV[1] = '1': wake every live waiter, each answers CONFIRMED).
-- KEYS[1] = the partition's waiters, KEYS[2..] = the lines.
-- -> the tickets woken
local function wait_wake(keys, args)
  local now, woken, out = pool_now(), {}, {}
  for i = 2, #keys do
    local tickets
    if args[1] == '1' then
      line_head(keys[i], keys[1], now, '')
      tickets = redis.call('ZRANGE', keys[i], 0, -1)
    else
      tickets = {line_head(keys[i], keys[1], now, '')}
    end
    for j = 1, #tickets do
      local t = tickets[j]
      if not woken[t] then
        woken[t] = true
        out[#out + 1] = t
        redis.call('PUBLISH', WAIT_CHANNEL, t)
      end
    end
  end
  return out
end

-- Release (as hf1_release), and wake the head of the line of every key it
-- released, in the same call: a Release costs one call whether or not
-- anyone waits. KEYS = n hold keys, the partition's waiters, their n lines.
-- ARGV[1] = token, ARGV[2] = n. batch: as hold's. -> as release
local function release_wake(keys, args, batch)
  local n = tonumber(args[2])
  local holds, freed = {}, {}
  for i = 1, n do holds[i] = keys[i] end
  local out = release(holds, args)
  if out[2] == 0 then return out end
  local waiters = keys[n + 1]
  -- Inside a batch an absent waiters hash stays absent (no batchable call
  -- joins a line), so it is asked once.
  if batch and batch.no_waiters[waiters] then return out end
  if redis.call('EXISTS', waiters) == 0 then
    if batch then batch.no_waiters[waiters] = true end
    return out
  end
  -- Released keys are gone now: those lines' heads may take them.
  for i = 1, n do
    if redis.call('EXISTS', holds[i]) == 0 then freed[#freed + 1] = keys[n + 1 + i] end
  end
  local now, woken = pool_now(), {}
  for i = 1, #freed do
    local head = line_head(freed[i], waiters, now, '')
    if head and not woken[head] then
      woken[head] = true
      redis.call('PUBLISH', WAIT_CHANNEL, head)
    end
  end
  return out
end

-- Many calls in one: the daemon sends the calls of one loop iteration (per
-- cluster slot) together. Each runs as its own call would, in the order
-- given, and gets its own reply; a call that raises an error answers that
-- error in its place and the others run on. They share one reading of the
-- clock, and each fence counter is read and written once.
-- KEYS = every call's keys, in order. ARGV[1] = number of calls, then per
-- call: its function's local name, its number of keys, its number of args,
-- its args. -> one reply per call
local BATCHABLE = {
  hold = hold, extend = extend, release = release, release_wake = release_wake,
  confirm_check = confirm_check, mark_confirmed = mark_confirmed,
  pool_hold = pool_hold, pool_extend = pool_extend, pool_release = pool_release,
  pool_confirm_check = pool_confirm_check, pool_mark_sold = pool_mark_sold,
}
local function batch(keys, args)
  local out, k, a = {}, 1, 2
  local state = {clock = clock_us(nil), fences = {}, counters = {}, no_waiters = {}}
  for i = 1, tonumber(args[1]) do
    local fn = BATCHABLE[args[a]]
    local nk, na = tonumber(args[a + 1]), tonumber(args[a + 2])
    local call_keys, call_args = {}, {}
    for j = 1, nk do call_keys[j] = keys[k + j - 1] end
    for j = 1, na do call_args[j] = args[a + 2 + j] end
    local ok, reply = pcall(fn, call_keys, call_args, state)
    if ok then
      out[i] = reply
    elseif type(reply) == 'table' and reply.err then
      out[i] = reply
    else
      out[i] = redis.error_reply(tostring(reply))
    end
    k, a = k + nk, a + 3 + na
  end
  -- Every fence counter the calls moved, written once (also after a call
  -- that raised: a fence it took is never handed out again).
  for _, counter in ipairs(state.counters) do
    redis.call('SET', counter, string.format('%.0f', state.fences[counter]))
  end
  return out
end

redis.register_function{function_name = 'hf1_hold', callback = hold}
redis.register_function{function_name = 'hf1_extend', callback = extend}
redis.register_function{function_name = 'hf1_release', callback = release}
redis.register_function{function_name = 'hf1_status', callback = status,
                        flags = {'no-writes'}}
redis.register_function{function_name = 'hf1_confirm_check', callback = confirm_check}
redis.register_function{function_name = 'hf1_mark_confirmed', callback = mark_confirmed}
redis.register_function{function_name = 'hf1_cancel_clear', callback = cancel_clear}
redis.register_function{function_name = 'hf1_pool_hold', callback = pool_hold}
redis.register_function{function_name = 'hf1_pool_extend', callback = pool_extend}
redis.register_function{function_name = 'hf1_pool_release', callback = pool_release}
redis.register_function{function_name = 'hf1_pool_status', callback = pool_status}
redis.register_function{function_name = 'hf1_pool_confirm_check', callback = pool_confirm_check}
redis.register_function{function_name = 'hf1_pool_mark_sold', callback = pool_mark_sold}
redis.register_function{function_name = 'hf1_session_renew', callback = session_renew}
redis.register_function{function_name = 'hf1_session_release', callback = session_release}
redis.register_function{function_name = 'hf1_hold_wait', callback = hold_wait}
redis.register_function{function_name = 'hf1_wait_leave', callback = wait_leave}
redis.register_function{function_name = 'hf1_wait_wake', callback = wait_wake}
redis.register_function{function_name = 'hf1_pool_hold_wait', callback = pool_hold_wait}
redis.register_function{function_name = 'hf1_release_wake', callback = release_wake}
redis.register_function{function_name = 'hf1_batch', callback = batch}
