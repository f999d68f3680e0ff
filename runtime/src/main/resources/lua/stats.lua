-- stats.lua: counts of one partition for the metrics gauges, read atomically; writes nothing.
-- KEYS: see lib.lua; the shards of the non-empty days up to today (the first 32: DQNEEDDAY)
-- Returns {jobs (all records), inflight, dead, oldest due runAt ms or -1, Redis now ms,
--          due now (runAt <= now, not taken), 1 if the partition is paused else 0, held back by their
--          groups (scheduled, in none of the shards: see lib.lua's gheld)}.
-- It runs for every partition at every scrape of every replica, so it stays at a few O(1) or
-- O(log n) commands: "next" (a lower bound of every runAt) answers "nothing due" alone, and only
-- a partition with due jobs pays for the day index, a ZCOUNT per past shard and its head.
local now = now_ms()
local oldest, due = -1, 0
local head = tonumber(rcall('GET', K_NEXT))
if head and head <= now then
  -- At most 32 shards, as take.lua: a backlog spread over more past days counts its first 32
  -- (the autoscaling signal is then far above any threshold anyway).
  local past = rcall('ZRANGE', K_DAYS, '-inf', day_of(now), 'BYSCORE', 'LIMIT', 0, 32)
  local days = {}
  for i = 1, #past do days[i] = tonumber(past[i]) end
  local err = require_days(days)
  if err then return err end
  for _, day in ipairs(days) do
    local shard = shard_of_day[day]
    local n = rcall('ZCOUNT', shard, '-inf', now)
    if n > 0 and oldest < 0 then
      oldest = tonumber(rcall('ZRANGE', shard, 0, 0, 'WITHSCORES')[2])
    end
    due = due + n
  end
end
-- The lanes' due jobs too (lib.lua), each lane's first 32 days, when lnext is due.
local lhead = tonumber(rcall('GET', K_LNEXT))
if lhead and lhead <= now then
  local codes = {}
  for _, lane in ipairs({ 1, 2, 4, 5 }) do
    for _, c in ipairs(rcall('ZRANGE', K_LDAYS, lane * LANE, lane * LANE + day_of(now), 'BYSCORE', 'LIMIT', 0, 32)) do
      codes[#codes + 1] = tonumber(c)
    end
  end
  local err = require_days(codes)
  if err then return err end
  for _, code in ipairs(codes) do
    local shard = shard_of_day[code]
    local n = rcall('ZCOUNT', shard, '-inf', now)
    if n > 0 then
      local top = tonumber(rcall('ZRANGE', shard, 0, 0, 'WITHSCORES')[2])
      if oldest < 0 or top < oldest then oldest = top end
    end
    due = due + n
  end
end
return { rcall('HLEN', K_JOBS), rcall('ZCARD', K_INFLIGHT), rcall('ZCARD', K_DEAD), oldest, now, due,
         rcall('EXISTS', K_PAUSED), rcall('ZCARD', K_GHELD) }
