-- reschedule.lua: moves a scheduled job to a new runAt, from the day shard of its old runAt to the
-- one of the new, in one step; attempts, lastError, payload and trace stay as they were.
-- KEYS: see lib.lua; the day shards of the old and of the new runAt (a call without one of them
--       fails with DQNEEDDAY naming it, before any write); with a result retention, succeeded and
--       results follow (lib.lua's K_RESULTS): a job that dies here takes the kept success of an
--       earlier job of its id with it (forget_kept)
-- ARGV[A]   = id
-- ARGV[A+1] = mode: 'd' = the new runAt is Redis now + value, 'a' = it is value (epoch ms)
-- ARGV[A+2] = value ms
-- ARGV[A+3] = wake channel (published to when the job becomes the partition's earliest)
-- ARGV[A+4] = a burial's callback flag and dead-set bounds (see lib.lua's bury); absent = '0'
-- A job its group holds back leaves gheld for the new shard when its new runAt is later than now
-- (it is a new candidate when due), else stays held under its new runAt; a released one moved later than now gives its slot to the group's next held job (lib.lua's group_release: today's shard).
-- A job whose new runAt is after its expiresAt (lib.lua's expired_by) goes to dead instead, lastError
-- "expired: <its last error, or rescheduled past expiresAt>".
-- Returns {1, record} when moved (the record as stored now), {2, record, then the ids its burial
-- trimmed from the dead set} when it went to dead so (the record as it died), {0} when there is no
-- such job,
-- {-1} when it is in flight, {-2} when it is dead (neither is moved).
local id = ARGV[A]
local rec = rcall('HGET', K_JOBS, id)
if not rec then return { 0 } end
if rcall('ZSCORE', K_INFLIGHT, id) then return { -1 } end
if rcall('ZSCORE', K_DEAD, id) then return { -2 } end
local r = decode(rec)
local now = now_ms()
local v = tonumber(ARGV[A + 2])
local run_at = ARGV[A + 1] == 'd' and now + v or v
local held = is_held(id, r)
if expired_by(r, run_at) then
  local admitted = held and {} or admitted_of({ id })
  local need = codes_of(r)
  need[#need + 1] = day_of(now)
  local err = require_days(need)
  if err then return err end
  -- Out of its shard (or gheld) as a cancel takes it, its slot given back; then dead.
  cancel_scheduled(id, r, held, admitted, now, ARGV[A + 3])
  local trimmed = bury_expired(id, r, now, ARGV[A + 4] or '0', 'rescheduled past expiresAt')
  return { 2, rcall('HGET', K_JOBS, id), unpack(trimmed) }
end
-- A released job (admitted, waiting in its shard) rescheduled to a time already due keeps its
-- admission: it starts next, as it would have.
local admitted = (held or run_at <= now) and {} or admitted_of({ id })
local need = codes_of(r)
need[#need + 1] = code_of(r.priority, day_of(run_at))
need[#need + 1] = day_of(now)
local err = require_days(need)
if err then return err end
return { 1, move_scheduled(id, r, held, admitted, run_at, now, ARGV[A + 3]) }
