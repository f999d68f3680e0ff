-- reclaim.lua: returns jobs whose lease expired (their replica died or stalled) to their shard,
-- due after the retry backoff of the lost attempt. The lost attempt counts, and waits like any
-- failed one: a job that kills its replica every time must neither take the survivors down one
-- after the other at once, nor loop forever (it ends in dead).
-- KEYS: see lib.lua; the day shards from Redis now to now + the longest backoff
-- ARGV[A]   = the most jobs to reclaim in this call (bounds the script's run time; the
--             reclaimer calls again while a full batch came back)
-- ARGV[A+1] = max attempts when the job has none of its own
-- ARGV[A+2] = wake channel
-- ARGV[A+3..A+6] = backoff: initial ms, multiplier, max ms, jitter (0..1): the delay after
--             attempt n is min(max, initial * multiplier^(n-1)), less up to jitter of it
-- ARGV[A+7] = a random draw in [0, 1) from the caller, for the jitter (Redis 6.2 reseeds Lua's
--             math.random before every script, so it would repeat the same "random" delays)
-- Returns {reclaimed count, dead count}. Sets "leasenext" to the earliest lease deadline left
-- (or drops it), so that the safety-net poll stops pointing here until a lease can expire.
local limit = tonumber(ARGV[A])
local now = now_ms()
local function set_lease_next()
  local top = rcall('ZRANGE', K_INFLIGHT, 0, 0, 'WITHSCORES')
  if #top > 0 then rcall('SET', K_LEASE_NEXT, top[2]) else rcall('DEL', K_LEASE_NEXT) end
end
local ids = rcall('ZRANGEBYSCORE', K_INFLIGHT, '-inf', now, 'LIMIT', 0, limit)
if #ids == 0 then
  set_lease_next()
  return { 0, 0 }
end
local initial, mult, max_delay, jitter = tonumber(ARGV[A + 3]), tonumber(ARGV[A + 4]), tonumber(ARGV[A + 5]),
  tonumber(ARGV[A + 6])
local draw = tonumber(ARGV[A + 7])
local function backoff(attempts)
  local d = math.min(max_delay, initial * mult ^ math.max(0, attempts - 1))
  return math.floor(d * (1 - jitter * draw))
end
-- Every day a backoff can reach must have its shard, checked before anything is written. The
-- loop is bounded by the longest backoff (a day per step).
local needed = {}
for t = now, now + max_delay + DAY_MS, DAY_MS do needed[#needed + 1] = day_of(math.min(t, now + max_delay)) end
local err = require_days(needed)
if err then return err end
local back, dead = 0, 0
for _, id in ipairs(ids) do
  -- Decoded before this job is moved: a record that cannot be read fails the script with this
  -- job still in flight (the ones before it are already back, each whole), never in no set.
  local rec = rcall('HGET', K_JOBS, id)
  local r = rec and decode(rec)
  rcall('ZREM', K_INFLIGHT, id)
  rcall('HDEL', K_LEASES, id)
  if r then
    r.attempts = r.attempts + 1
    r.err = 'lease expired: the replica running it stopped or stalled'
    local max = r.max > 0 and r.max or tonumber(ARGV[A + 1])
    if r.attempts >= max then
      rcall('HSET', K_JOBS, id, encode(r))
      rcall('ZADD', K_DEAD, now, id)
      dead = dead + 1
    else
      r.run_at = now + backoff(r.attempts)
      rcall('HSET', K_JOBS, id, encode(r))
      schedule(id, r.run_at, ARGV[A + 2])
      back = back + 1
    end
  end
end
set_lease_next()
return { back, dead }
