-- requeue.lua: drain; puts a stopping replica's unfinished jobs back into the shard of Redis
-- now, due at once, so another replica runs them without waiting for their lease to expire.
-- The attempt is not counted: the observer was interrupted by us, not by the job.
-- KEYS: see lib.lua; the day shard of Redis now
-- ARGV[A] = wake channel, ARGV[A+1] = n; then n pairs: id, lease token
-- Returns the number of jobs put back (a job whose lease is no longer ours is left alone; one whose
-- cancel was asked is removed, see lib.lua's drop_cancelled).
local channel = ARGV[A]
local n = tonumber(ARGV[A + 1])
local now = now_ms()
-- Each job goes back into its lane's shard of today: all of them named before any write.
local need = { day_of(now) }
for i = 1, n do
  local id = ARGV[A + (i - 1) * 2 + 2]
  if rcall('HGET', K_LEASES, id) == ARGV[A + (i - 1) * 2 + 3] then
    local rec = rcall('HGET', K_JOBS, id)
    if rec then need[#need + 1] = code_of(decode(rec).priority, day_of(now)) end
  end
end
local err = require_days(need)
if err then return err end
local back = 0
-- A job of a group keeps its admission (gadmit, and its group's count): it is due at once, ahead
-- of the group's held jobs, as a released one is, so the group's order and limit stay as they were.
for i = 1, n do
  local id, token = ARGV[A + (i - 1) * 2 + 2], ARGV[A + (i - 1) * 2 + 3]
  local holder = rcall('HGET', K_LEASES, id)
  if holder and marked(holder) and (holder == token or holder == token .. CANCEL_MARK) then
    -- Its cancel was asked: removed, not put back (lib.lua's drop_cancelled).
    drop_cancelled(id, admitted_of({ id }), now, channel)
  elseif holder == token then
    local r = decode(rcall('HGET', K_JOBS, id))
    rcall('ZREM', K_INFLIGHT, id)
    rcall('HDEL', K_LEASES, id)
    r.run_at = now
    rcall('HSET', K_JOBS, id, encode(r))
    schedule(id, now, channel, r.priority)
    back = back + 1
  end
end
if back > 0 then free_slots(channel) end
return back
