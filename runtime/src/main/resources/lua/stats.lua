-- stats.lua: counts of one partition for the metrics gauges, read atomically.
-- KEYS: see lib.lua; the day shards up to today (the oldest one, at least)
-- Returns {jobs (all records), inflight, dead, oldest overdue runAt ms or -1, Redis now ms}.
local now = now_ms()
local oldest = -1
local first = rcall('ZRANGE', K_DAYS, 0, 0)
if #first > 0 then
  local day = tonumber(first[1])
  if day <= day_of(now) then
    local err = require_days({ day })
    if err then return err end
    local top = rcall('ZRANGE', shard_of_day[day], 0, 0, 'WITHSCORES')
    if #top > 0 and tonumber(top[2]) <= now then oldest = tonumber(top[2]) end
  end
end
return { rcall('HLEN', K_JOBS), rcall('ZCARD', K_INFLIGHT), rcall('ZCARD', K_DEAD), oldest, now }
