-- reclaim.lua: returns jobs whose lease expired (their replica died or stalled) to the shard
-- of Redis now, due at once. The lost attempt counts: a job that kills its replica every time
-- must end in dead rather than loop forever.
-- KEYS: see lib.lua; the day shard of Redis now
-- ARGV[A]   = the most jobs to reclaim in this call (bounds the script's run time; the
--             reclaimer calls again while a full batch came back)
-- ARGV[A+1] = max attempts when the job has none of its own
-- ARGV[A+2] = wake channel
-- Returns {reclaimed count, dead count}.
local limit = tonumber(ARGV[A])
local now = now_ms()
local ids = rcall('ZRANGEBYSCORE', K_INFLIGHT, '-inf', now, 'LIMIT', 0, limit)
if #ids == 0 then return { 0, 0 } end
local err = require_days({ day_of(now) })
if err then return err end
local back, dead = 0, 0
for _, id in ipairs(ids) do
  -- Decoded before anything is written: a record that cannot be read fails the script with
  -- every job still where it was, rather than leaving one in no set at all.
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
      r.run_at = now
      rcall('HSET', K_JOBS, id, encode(r))
      schedule(id, now, ARGV[A + 2])
      back = back + 1
    end
  end
end
return { back, dead }
