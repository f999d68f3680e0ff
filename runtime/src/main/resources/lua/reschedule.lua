-- reschedule.lua: moves a scheduled job to a new runAt, from the day shard of its old runAt to the
-- one of the new, in one step; attempts, lastError, payload and trace stay as they were.
-- KEYS: see lib.lua; the day shards of the old and of the new runAt (a call without one of them
--       fails with DQNEEDDAY naming it, before any write)
-- ARGV[A]   = id
-- ARGV[A+1] = mode: 'd' = the new runAt is Redis now + value, 'a' = it is value (epoch ms)
-- ARGV[A+2] = value ms
-- ARGV[A+3] = wake channel (published to when the job becomes the partition's earliest)
-- A job its group holds back leaves gheld for the new shard when its new runAt is later than now
-- (it is a new candidate when due), else stays held under its new runAt; a released one moved later than now gives its slot to the group's next held job (lib.lua's group_release: today's shard).
-- Returns {1, record} when moved (the record as stored now), {0} when there is no such job,
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
local old_run_at, old_day = r.run_at, day_of(r.run_at)
local held = is_held(id, r)
-- A released job (admitted, waiting in its shard) rescheduled to a time already due keeps its
-- admission: it starts next, as it would have.
local admitted = (held or run_at <= now) and {} or admitted_of({ id })
local err = require_days({ old_day, day_of(run_at), day_of(now) })
if err then return err end

if held then
  rcall('ZREM', K_GHELD, held_member(r.group, r.run_at, id))
else
  local old_shard = shard_of_day[old_day]
  rcall('ZREM', old_shard, id)
  if rcall('ZCARD', old_shard) == 0 then rcall('ZREM', K_DAYS, old_day) end
end
r.run_at = run_at
rec = encode(r)
rcall('HSET', K_JOBS, id, rec)
if held and run_at <= now then
  -- Still due: it keeps its place among its group's held jobs (by its runAt); in a shard, a later
  -- job of its group could start before it.
  rcall('ZADD', K_GHELD, 0, held_member(r.group, run_at, id))
  return { 1, rec }
end
local head = tonumber(rcall('GET', K_NEXT))
-- Into the new shard (the day index gets its day); an earlier runAt than every other lowers
-- "next" and wakes the takers.
schedule(id, run_at, ARGV[A + 3])
-- A job that was at the head and moved later leaves "next" too low: still a valid lower bound,
-- but takers would wake for nothing, so set it exactly.
if not held and head and old_run_at <= head and run_at > head then reset_next() end
group_release(admitted, now, ARGV[A + 3])
return { 1, rec }
