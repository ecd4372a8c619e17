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

-- Hold, all or nothing.
-- KEYS[1] = fence counter of the partition, KEYS[2..] = hold keys.
-- ARGV[1] = random part of the token, ARGV[2] = TTL in ms.
-- -> {GRANTED, fence} | {HELD_BY_ANOTHER|CONFIRMED, index of the id (1-based)}
local function hold(keys, args)
  for i = 2, #keys do
    local value = redis.call('GET', keys[i])
    if value then
      if is_confirmed(value) then return {CONFIRMED, i - 1} end
      return {HELD_BY_ANOTHER, i - 1}
    end
  end
  -- The fence never goes backwards, even if the counter was lost in a
  -- failover: it is at least Redis' clock in microseconds.
  local now = redis.call('TIME')
  local clock = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local previous = tonumber(redis.call('GET', keys[1])) or 0
  local fence = string.format('%.0f', math.max(previous + 1, clock))
  redis.call('SET', keys[1], fence)
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

redis.register_function{function_name = 'hf1_hold', callback = hold}
redis.register_function{function_name = 'hf1_extend', callback = extend}
redis.register_function{function_name = 'hf1_release', callback = release}
redis.register_function{function_name = 'hf1_status', callback = status,
                        flags = {'no-writes'}}
redis.register_function{function_name = 'hf1_confirm_check', callback = confirm_check}
redis.register_function{function_name = 'hf1_mark_confirmed', callback = mark_confirmed}
redis.register_function{function_name = 'hf1_cancel_clear', callback = cancel_clear}
redis.register_function{function_name = 'hf1_session_renew', callback = session_renew}
redis.register_function{function_name = 'hf1_session_release', callback = session_release}
