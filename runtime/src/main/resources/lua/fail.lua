-- fail.lua: records a failed attempt: reschedules the job after a backoff, or moves it to dead
-- after its last attempt or when the failure is permanent.
-- KEYS: see lib.lua; the day shard of Redis now + delay, and today's (a job of a group frees its
--       group's slot: see lib.lua's group_release)
-- ARGV[A]   = id
-- ARGV[A+1] = lease token of the failing attempt
-- ARGV[A+2] = retry delay ms (computed by the retry policy in Java)
-- ARGV[A+3] = error text (one line)
-- ARGV[A+4] = max attempts when the job has none of its own
-- ARGV[A+5] = wake channel
-- ARGV[A+6] = '1' when the failure is permanent (dead whatever attempts remain), else '0'
-- ARGV[A+7] = the burial's callback flag and dead-set bounds (see lib.lua's bury)
-- Returns {'retry', runAt, attempts} | {'dead', died at, attempts, ids trimmed from the dead set...}
-- | {'expired', died at, attempts, ids trimmed...} when the retry would be due after the job's
-- expiresAt (lib.lua's expired_by): dead, lastError "expired: <this attempt's error>"
-- | {'stale'} when the lease is held by another attempt (nothing changed) | {'cancelled'} when its
-- cancel was asked (cancel.lua): the job is gone.
local id, token = ARGV[A], ARGV[A + 1]
-- A job whose cancel was asked while it ran is removed, not retried (lib.lua's unless_holder).
local ended = unless_holder(id, token, ARGV[A + 5])
if ended then return ended end
local now, admitted, need = admitted_now(id)
if need then return need end
local r = decode(rcall('HGET', K_JOBS, id))
r.attempts = r.attempts + 1
r.err = ARGV[A + 3]
-- A reported failure ends a run of lost attempts (see reclaim.lua): the job ran to an outcome on
-- a living replica; failures are bounded by max attempts anyway.
r.lost = 0
local max = r.max > 0 and r.max or tonumber(ARGV[A + 4])
if r.attempts >= max or ARGV[A + 6] == '1' then
  rcall('ZREM', K_INFLIGHT, id)
  rcall('HDEL', K_LEASES, id)
  local trimmed = bury(id, r, now, ARGV[A + 7])
  group_release(admitted, now, ARGV[A + 5])
  free_slots(ARGV[A + 5])
  return { 'dead', now, r.attempts, unpack(trimmed) }
end
r.run_at = now + tonumber(ARGV[A + 2])
if expired_by(r, r.run_at) then
  rcall('ZREM', K_INFLIGHT, id)
  rcall('HDEL', K_LEASES, id)
  local trimmed = bury_expired(id, r, now, ARGV[A + 7], 'retry after expiresAt')
  group_release(admitted, now, ARGV[A + 5])
  free_slots(ARGV[A + 5])
  return { 'expired', now, r.attempts, unpack(trimmed) }
end
local err = require_days({ code_of(r.priority, day_of(r.run_at)) })
if err then return err end
rcall('ZREM', K_INFLIGHT, id)
rcall('HDEL', K_LEASES, id)
rcall('HSET', K_JOBS, id, encode(r))
schedule(id, r.run_at, ARGV[A + 5], r.priority)
group_release(admitted, now, ARGV[A + 5])
free_slots(ARGV[A + 5])
return { 'retry', r.run_at, r.attempts }
