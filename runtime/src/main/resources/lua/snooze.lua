-- snooze.lua: ends an attempt its observer snoozed: the job goes back to the shard of the time
-- asked, its attempts and lastError as they were before the attempt (the attempt is not counted).
-- Its lost attempts stay too: a snooze costs no attempt, so were it to reset them, a job that
-- snoozes and then kills its replica, over and over, would never reach max lost attempts.
-- KEYS: see lib.lua; the day shard of the new runAt, and today's (see fail.lua); with a result
--       retention, succeeded and results follow (lib.lua's K_RESULTS): a job that dies or is
--       cancelled here takes the kept success of an earlier job of its id with it (forget_kept)
-- ARGV[A]   = id
-- ARGV[A+1] = lease token of the snoozing attempt
-- ARGV[A+2] = 'd': ARGV[A+3] is a delay ms from Redis now; 'a': ARGV[A+3] is epoch ms (a time
--             already passed means now)
-- ARGV[A+3] = ms
-- ARGV[A+4] = wake channel
-- ARGV[A+5] = a burial's callback flag and dead-set bounds (see lib.lua's bury); '' from a caller
--             of a release before expiresAt: '0'
-- Returns {'snoozed', runAt} | {'expired', died at, ids trimmed...} when the new runAt would be
-- after the job's expiresAt (lib.lua's expired_by): dead, lastError "expired: <its last error, or
-- snoozed past expiresAt>" | {'stale'} when the lease is held by another attempt (nothing
-- changed) | {'cancelled'} when its cancel was asked (cancel.lua): the job is gone.
local id, token = ARGV[A], ARGV[A + 1]
-- A job whose cancel was asked while it ran is removed, not retried (lib.lua's unless_holder).
local ended = unless_holder(id, token, ARGV[A + 4])
if ended then return ended end
local now, admitted, need = admitted_now(id)
if need then return need end
local r = decode(rcall('HGET', K_JOBS, id))
local ms = tonumber(ARGV[A + 3])
local run_at = ARGV[A + 2] == 'd' and now + ms or math.max(now, ms)
if expired_by(r, run_at) then
  rcall('ZREM', K_INFLIGHT, id)
  rcall('HDEL', K_LEASES, id)
  local burial = ARGV[A + 5]
  local trimmed = bury_expired(id, r, now, (burial and burial ~= '') and burial or '0', 'snoozed past expiresAt')
  group_release(admitted, now, ARGV[A + 4])
  free_slots(ARGV[A + 4])
  return { 'expired', now, unpack(trimmed) }
end
local err = require_days({ code_of(r.priority, day_of(run_at)) })
if err then return err end
r.run_at = run_at
rcall('ZREM', K_INFLIGHT, id)
rcall('HDEL', K_LEASES, id)
rcall('HSET', K_JOBS, id, encode(r))
schedule(id, run_at, ARGV[A + 4], r.priority)
group_release(admitted, now, ARGV[A + 4])
free_slots(ARGV[A + 4])
return { 'snoozed', run_at }
