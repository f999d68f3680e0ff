-- deadsweep.lua: one bounded step over a partition's dead set, for the operator's filtered list,
-- requeue and purge. Examines at most n members in order of death from a cursor, keeps those
-- whose id starts with a prefix and whose last error contains a text, and lists them, requeues
-- them (dead -> scheduled, due now, attempts reset, in one step: revive_dead) or purges them
-- (record and dead-set entry together: purge_dead). Mode 'trim' is the retention sweep instead
-- (see below). Java calls it again from the cursor it
-- returns until it says done: each call is atomic, and n bounds how long it holds Redis — the
-- dead set can be large (up to its cap, delayq.dead.max-jobs), so no call may walk all of it.
-- The cursor is a score and the last member of that score examined and left in place ('' when
-- none was). Members of one score sort by id (bytewise), so the next call resumes right after that
-- member: it finds, by a binary search over the ranks of that score's run, the first member past
-- it, which is exact whether it is still there or was removed meanwhile (a single purge or requeue
-- between two calls shifts no one). Requeue and purge walk oldest first
-- up to `to`, the Redis time the action was asked at: a job that dies meanwhile (a requeued one
-- that fails again too) scores after it and is not touched.
-- A member whose record is missing or unreadable never matches, in every mode: it is left in place
-- (nothing is lost, the walk goes on past it, and no call fails on it).
-- KEYS: see lib.lua; the day shard of Redis now (requeue); with several partitions the claims key
-- after it (requeue: a dead job whose id another partition claims is left in place, see
-- lib.lua's revive_dead)
-- ARGV[A]   = mode: 'list' or 'count' (newest first, write nothing; count returns no jobs),
--             'requeue' or 'purge' (oldest first)
-- ARGV[A+1] = from: the cursor's score ('+inf' to start a list or count, '-inf' an action)
-- ARGV[A+2] = after: the last member of score `from` examined and left in place, '' = none
-- ARGV[A+3] = to: the last score to examine ('-inf' for a list or count; the time asked for an
--             action)
-- ARGV[A+4] = n: members to examine at most (Java passes at most 500)
-- ARGV[A+5] = id prefix, '' = any id
-- ARGV[A+6] = error text, '' = any error: a substring of lastError, ASCII letters compared
--             without case (both sides lower-cased)
-- ARGV[A+7] = wake channel (requeue; '' otherwise)
-- ARGV[A+8] = list: matches wanted at most (the walk stops at the one that fills them)
-- Returns {done (1 when the walk reached `to`), from, kept, examined, acted} and, for a list,
-- then id, time of death, record for each match.
-- Mode 'trim' (DeadRetention.java) removes, at most n of each, the dead jobs and the failed
-- callbacks past the partition's bounds (lib.lua's trim_dead and trim_cbfailed):
-- ARGV[A+1] = the dead jobs (and failed callbacks) the partition keeps, 0 = no bound
-- ARGV[A+2] = how long one is kept, ms, 0 = no bound
-- ARGV[A+3] = n
-- and returns {failed callbacks removed, the ids of the dead jobs removed...}.
if ARGV[A] == 'trim' then
  local now, n = now_ms(), tonumber(ARGV[A + 3])
  local keep, max_age = tonumber(ARGV[A + 1]), tonumber(ARGV[A + 2])
  local callbacks = trim_cbfailed(keep, max_age, now, n)
  return { callbacks, unpack(trim_dead(keep, max_age, now, n)) }
end
local mode, from, after, to = ARGV[A], ARGV[A + 1], ARGV[A + 2], ARGV[A + 3]
local n, prefix, text = tonumber(ARGV[A + 4]), ARGV[A + 5], string.lower(ARGV[A + 6])
local channel, wanted = ARGV[A + 7], tonumber(ARGV[A + 8])
local listing, reading = mode == 'list' or mode == 'count', mode == 'list'
local now
if mode == 'requeue' then
  now = now_ms()
  local err = require_days({ day_of(now) })
  if err then return err end
end

-- Bytewise order, as Redis sorts the members of one score (Lua's < follows the locale).
local function lex_lt(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- How many members of score `from` come before the resume point: the run of that score holds
-- ranks lo .. lo + len - 1 (in the walk's order); the first one past `after` is found by bisection.
local offset = 0
if after ~= '' then
  local lo, len
  if listing then
    lo, len = rcall('ZCOUNT', K_DEAD, '(' .. from, '+inf'), rcall('ZCOUNT', K_DEAD, from, from)
  else
    lo, len = rcall('ZCOUNT', K_DEAD, '-inf', '(' .. from), rcall('ZCOUNT', K_DEAD, from, from)
  end
  local a, b = 0, len
  while a < b do
    local mid = math.floor((a + b) / 2)
    local m = listing and rcall('ZRANGE', K_DEAD, lo + mid, lo + mid, 'REV')[1]
        or rcall('ZRANGE', K_DEAD, lo + mid, lo + mid)[1]
    local past
    if listing then past = lex_lt(m, after) else past = lex_lt(after, m) end
    if past then b = mid else a = mid + 1 end
  end
  offset = a
end

local batch
if listing then
  batch = rcall('ZRANGE', K_DEAD, from, to, 'BYSCORE', 'REV', 'LIMIT', offset, n, 'WITHSCORES')
else
  batch = rcall('ZRANGE', K_DEAD, from, to, 'BYSCORE', 'LIMIT', offset, n, 'WITHSCORES')
end

-- The record decoded, or nil when it is missing or unreadable (checked to encode back too, as
-- revive_dead will write it, so that a requeue cannot fail half-way on it).
local function readable(rec)
  if not rec then return nil end
  local ok, r = pcall(function()
    local d = decode(rec)
    encode(d)
    encode({ run_at = 0, attempts = 0, max = d.max, err = '', trace = d.trace, lost = 0, retry = d.retry,
      payload = d.payload })
    return d
  end)
  if ok then return r end
  return nil
end

local out = { 0, from, after, 0, 0 }
local examined, acted, plen, stopped = 0, 0, #prefix, false
for i = 1, #batch, 2 do
  local id, score = batch[i], batch[i + 1]
  if score ~= from then from, after = score, '' end
  examined = examined + 1
  local rec
  local match = plen == 0 or string.sub(id, 1, plen) == prefix
  if match then
    rec = rcall('HGET', K_JOBS, id)
    local r = readable(rec)
    match = r ~= nil
    if match and text ~= '' then
      match = string.find(string.lower(r.err or ''), text, 1, true) ~= nil
    end
  end
  if match and mode == 'requeue' then
    -- A dead job whose id another partition claims stays (see revive_dead): left in place.
    match = revive_dead(id, now, channel)
    if not match then after = id end
  elseif match and mode == 'purge' then
    purge_dead(id)
  else
    after = id
  end
  if match then
    acted = acted + 1
    if reading then
      out[#out + 1] = id
      out[#out + 1] = score
      out[#out + 1] = rec
      if acted >= wanted then stopped = true break end
    end
  end
end
if #batch < n * 2 and not stopped then out[1] = 1 end
out[2], out[3], out[4], out[5] = from, after, examined, acted
return out
