-- cancel.lua: deletes a scheduled job (record and shard entry).
-- KEYS: see lib.lua; the day shard of the job's runAt (first call without it: DQNEEDDAY names it)
-- ARGV[A] = id
-- Returns 1 deleted, 0 unknown, -1 in flight, -2 dead (neither is cancelled).
local id = ARGV[A]
local rec = rcall('HGET', K_JOBS, id)
if not rec then return 0 end
if rcall('ZSCORE', K_INFLIGHT, id) then return -1 end
if rcall('ZSCORE', K_DEAD, id) then return -2 end
local day = day_of(decode(rec).run_at)
local err = require_days({ day })
if err then return err end
local shard = shard_of_day[day]
rcall('ZREM', shard, id)
if rcall('ZCARD', shard) == 0 then rcall('ZREM', K_DAYS, day) end
rcall('HDEL', K_JOBS, id)
-- "next" may now be earlier than the true earliest job: still a valid lower bound, the next
-- take recomputes it.
-- A success remembered from before this job was enqueued (by a process without the dedup
-- window) must not answer for an id that is now free.
rcall('ZREM', K_DONE, id)
return 1
