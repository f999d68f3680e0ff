-- cancel.lua: deletes a scheduled job (record and shard entry).
-- KEYS: see lib.lua; the day shard of the job's runAt (first call without it: DQNEEDDAY names it)
-- ARGV[A] = id, ARGV[A+1] = wake channel (a released job of a group gives its slot to the group's
--           next held job: see lib.lua's group_release; that needs today's shard too)
-- A job its group holds back is deleted from gheld (it is in no shard).
-- Returns 1 deleted, 0 unknown, -1 in flight, -2 dead (neither is cancelled).
local id = ARGV[A]
local rec = rcall('HGET', K_JOBS, id)
if not rec then return 0 end
if rcall('ZSCORE', K_INFLIGHT, id) then return -1 end
if rcall('ZSCORE', K_DEAD, id) then return -2 end
local r = decode(rec)
local held = is_held(id, r)
local admitted = held and {} or admitted_of({ id })
local now = #admitted > 0 and now_ms() or 0
if not held then
  local err = require_days(#admitted > 0 and { day_of(r.run_at), day_of(now) } or { day_of(r.run_at) })
  if err then return err end
end
cancel_scheduled(id, r, held, admitted, now, ARGV[A + 1])
return 1
