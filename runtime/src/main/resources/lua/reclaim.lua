-- reclaim.lua: returns jobs whose lease expired without an outcome (their replica crashed, was
-- cut off or froze) to their shard, due after the retry backoff of the lost attempt. A lost
-- attempt is counted apart (the record's lost count), not in attempts: nothing the job did
-- failed, so it must not use up maxAttempts. It still waits like a failed one, so that a job that
-- kills its replica every time does not take the survivors down one after the other at once; and
-- after max lost attempts in a row (a reported failure resets the count, a snooze does not: see
-- fail.lua and snooze.lua) it goes to dead, so that such a job does not loop forever.
-- A lease the caller holds itself (its token is among those passed in) is left alone: the caller
-- is alive and may still be running that attempt; its own heartbeat extends the lease. A lease of
-- the caller's that it no longer holds (an outcome it could not record, a take whose reply it
-- lost) is reclaimed like anyone's: nobody else would, when no other replica serves the topic.
-- A call Redis runs after its deadline reclaims nothing (it only corrects "leasenext"): it was
-- sent while the caller saw Redis answer, and Redis ran it late (a pause, a hung master), when
-- the holders' own extends may still be queued behind it.
-- KEYS: see lib.lua; the day shards from Redis now to now + the topic's longest backoff (a job's
-- own backoff can reach further: the day of each job's new runAt is checked before any write, and
-- a missing one named with DQNEEDDAY, so Java calls again with it)
-- ARGV[A]   = the most jobs to reclaim in this call (bounds the script's run time; the
--             reclaimer calls again while a full batch came back)
-- ARGV[A+1] = max attempts when the job has none of its own (unused since lost attempts no
--             longer count as attempts; kept so that the ARGV layout stays)
-- ARGV[A+2] = wake channel
-- ARGV[A+3..A+6] = the topic's backoff: initial ms, multiplier, max ms, jitter (0..1): the delay
--             after lost attempt n is min(max, initial * multiplier^(n-1)), less up to jitter of
--             it; a job with its own retry backoff (its record's retry, see lib.lua) has its
--             initial and max in place of the topic's, as after a failed attempt (JobRetry.java)
-- ARGV[A+7] = a random draw in [0, 1) from the caller, for the jitter (Redis 6.2 reseeds Lua's
--             math.random before every script, so it would repeat the same "random" delays)
-- ARGV[A+8] = max lost attempts in a row: the loss that reaches it moves the job to dead
-- ARGV[A+9] = deadline: Redis time (ms) after which this call reclaims nothing, 0 = none
-- ARGV[A+10] = a burial's callback flag and dead-set bounds (see lib.lua's bury)
-- ARGV[A+11] = h, the number of lease tokens the caller holds in this partition; then h tokens:
--             leases with one of them are skipped
-- A job whose cancel was asked (its lease carries lib.lua's CANCEL_MARK) is removed instead: its
-- holder is gone, and it must not run again.
-- A job whose rerun would be due after its expiresAt (lib.lua's expired_by) goes to dead instead,
-- lastError "expired: lease expired: ...".
-- Returns {reclaimed count, dead count (expired ones included), removed (cancelled) count, expired
-- count, ids trimmed from the dead set by the burials...}. Sets "leasenext" to the earliest lease deadline left (or drops it), so that the
-- safety-net poll stops pointing here until a lease can expire.
local limit = tonumber(ARGV[A])
local max_lost = tonumber(ARGV[A + 8])
local deadline = tonumber(ARGV[A + 9])
local held_count = tonumber(ARGV[A + 11])
local held = {}
for i = 1, held_count do held[ARGV[A + 11 + i]] = true end
local now = now_ms()
local function set_lease_next()
  local top = rcall('ZRANGE', K_INFLIGHT, 0, 0, 'WITHSCORES')
  if #top > 0 then rcall('SET', K_LEASE_NEXT, top[2]) else rcall('DEL', K_LEASE_NEXT) end
end
if deadline > 0 and now > deadline then
  set_lease_next()
  return { 0, 0 }
end
-- Read past the caller's own held leases (at most h of them), so that a full batch can still be
-- reclaimed behind them.
local ids = rcall('ZRANGEBYSCORE', K_INFLIGHT, '-inf', now, 'LIMIT', 0, limit + held_count)
if #ids == 0 then
  set_lease_next()
  return { 0, 0 }
end
local initial, mult, max_delay, jitter = tonumber(ARGV[A + 3]), tonumber(ARGV[A + 4]), tonumber(ARGV[A + 5]),
  tonumber(ARGV[A + 6])
local draw = tonumber(ARGV[A + 7])
-- A job's own bounds (the record's retry text "<initial>,<max>", either empty when not given), as
-- JobRetry.applyTo: a value given alone moves the topic's other to meet it. Text that is not that
-- (a part not all digits, no comma, both empty) is none, as JobRecord.decodeRetry reads it.
local function bounds_of(retry)
  local c = retry ~= '' and string.find(retry, ',', 1, true)
  if not c then return initial, max_delay end
  local a, b = string.sub(retry, 1, c - 1), string.sub(retry, c + 1)
  if (a == '' and b == '') or (a ~= '' and not string.find(a, '^%d+$'))
      or (b ~= '' and not string.find(b, '^%d+$')) then
    return initial, max_delay
  end
  if b == '' then
    local i = tonumber(a)
    return i, math.max(max_delay, i)
  end
  if a == '' then
    local m = tonumber(b)
    return math.min(initial, m), m
  end
  return tonumber(a), tonumber(b)
end
local function backoff(n, retry)
  local i, m = bounds_of(retry)
  local d = math.min(m, i * mult ^ math.max(0, n - 1))
  return math.floor(d * (1 - jitter * draw))
end
-- First pass, no writes: the jobs this call moves (up to limit with a record), decoded, and the
-- new runAt of each one going back. Every day those reach must have its shard, checked before
-- anything is written: a job's own backoff can reach past the days Java passed for the topic's.
-- A record that cannot be read goes to dead as it is (its text kept as a JSON string payload):
-- failing the script would leave it first in line, and block every reclaim of the partition on
-- every replica for good.
local todo, needed, seen_day = {}, {}, {}
local counted = 0
for _, id in ipairs(ids) do
  if counted >= limit then break end
  local token = rcall('HGET', K_LEASES, id)
  local cancelled = marked(token)
  if cancelled then token = string.sub(token, 1, -2) end
  if not (token and held[token]) then
    local job = { id = id, cancelled = cancelled }
    local rec = rcall('HGET', K_JOBS, id)
    if cancelled then
      counted = counted + 1 -- removed, whatever its record says (lib.lua's CANCEL_MARK)
    elseif rec then
      counted = counted + 1
      local ok, decoded = pcall(function() return decode(rec) end)
      if ok and decoded and decoded.run_at and decoded.attempts and decoded.max then
        job.r = decoded
        decoded.lost = decoded.lost + 1
        if decoded.lost < max_lost then
          decoded.run_at = now + backoff(decoded.lost, decoded.retry)
          local day = code_of(decoded.priority, day_of(decoded.run_at))
          if not seen_day[day] then
            seen_day[day] = true
            needed[#needed + 1] = day
          end
        end
      else
        job.unreadable = true
        job.r = { run_at = now, attempts = 0, max = 0, lost = 0, trace = '', retry = '', payload = cjson.encode(rec) }
      end
    end
    todo[#todo + 1] = job
  end
end
local moved = {}
for _, job in ipairs(todo) do moved[#moved + 1] = job.id end
-- Jobs of a group give their slots back (their next held job is released: today's shard).
local admitted = admitted_of(moved)
if #admitted > 0 and not seen_day[day_of(now)] then needed[#needed + 1] = day_of(now) end
local err = require_days(needed)
if err then return err end
local back, dead, dropped, expired, trimmed = 0, 0, 0, 0, {}
-- A burial's trimmed ids, for Java to count and log.
local function buried(gone)
  for _, g in ipairs(gone) do trimmed[#trimmed + 1] = g end
  dead = dead + 1
end
for _, job in ipairs(todo) do
  local id, r = job.id, job.r
  rcall('ZREM', K_INFLIGHT, id)
  rcall('HDEL', K_LEASES, id)
  if job.cancelled then
    -- Its cancel was asked and its holder is gone: removed, not run again.
    rcall('HDEL', K_JOBS, id)
    rcall('ZREM', K_DONE, id)
    dropped = dropped + 1
  elseif job.unreadable then
    r.err = 'unreadable record, moved to dead by reclaim (its text is the payload)'
    buried(bury(id, r, now, ARGV[A + 10]))
  elseif r then
    if r.lost >= max_lost then
      r.err = 'lease expired ' .. r.lost .. ' time(s) in a row without an outcome (the replica running it '
        .. 'stopped or stalled): delayq.dispatch.max-lost-attempts (' .. max_lost .. ') reached'
      buried(bury(id, r, now, ARGV[A + 10]))
    elseif expired_by(r, r.run_at) then
      buried(bury_expired(id, r, now, ARGV[A + 10], 'lease expired: the replica running it stopped or stalled,'
        .. ' and its rerun would be after expiresAt'))
      expired = expired + 1
    else
      r.err = 'lease expired: the replica running it stopped or stalled'
      rcall('HSET', K_JOBS, id, encode(r))
      schedule(id, r.run_at, ARGV[A + 2], r.priority)
      back = back + 1
    end
  end
end
set_lease_next()
group_release(admitted, now, ARGV[A + 2])
if back + dead + dropped > 0 then free_slots(ARGV[A + 2]) end
return { back, dead, dropped, expired, unpack(trimmed) }
