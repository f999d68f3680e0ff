-- peek.lua: what the dashboard shows of one partition, read in one atomic step; writes nothing.
-- KEYS: see lib.lua; the shards of the days it names (DQNEEDDAY): the non-empty days up to today
--       (the first 32), those of the timeline, and the first 8 non-empty days (the next due jobs);
--       the same of each priority lane (lane codes, see lib.lua), the days it holds only
-- ARGV[A]   = timeline bucket width ms; ARGV[A+1] = bucket count (the timeline starts now)
-- ARGV[A+2] = how many of the next due jobs to list; ARGV[A+3] = how many in-flight jobs to list
-- Returns {now, due now (runAt <= now, not taken), oldest due runAt or -1, {bucket counts},
--          {id, runAt, record, ...} of the next jobs by runAt (due ones first),
--          {id, lease deadline, lease token, record, ...} of in-flight jobs by lease deadline,
--          all jobs (records), in flight, dead, held back by their groups (see lib.lua's gheld),
--          {id, runAt, group, record, ...} of the first held ones (by group, then runAt)}.
-- Every loop is bounded by the limits above (a dashboard read must never scan a partition).
local now = now_ms()
local width, buckets = tonumber(ARGV[A]), tonumber(ARGV[A + 1])
local want_next, want_inflight = math.min(tonumber(ARGV[A + 2]), 200), math.min(tonumber(ARGV[A + 3]), 200)
local today = day_of(now)
local horizon = now + width * buckets

local past = rcall('ZRANGE', K_DAYS, '-inf', today, 'BYSCORE', 'LIMIT', 0, 32)
local first = rcall('ZRANGE', K_DAYS, 0, 7)
local needed, timeline_days = {}, {}
for _, d in ipairs(past) do needed[#needed + 1] = tonumber(d) end
if want_next > 0 then
  for _, d in ipairs(first) do needed[#needed + 1] = tonumber(d) end
end
local d = today
while day_start(d) <= horizon and #timeline_days < 400 do
  timeline_days[#timeline_days + 1] = d
  needed[#needed + 1] = d
  d = day_of(day_start(d) + DAY_MS)
end
-- The lanes (lib.lua): their days up to today, those within the timeline, and each lane's first
-- days for the next jobs; only days a lane holds (ldays), so no shard is asked for in vain.
local lane_past, lane_timeline, lane_first = {}, {}, {}
local horizon_day = day_of(horizon)
for _, lane in ipairs({ 1, 2, 4, 5 }) do
  local base = lane * LANE
  for _, c in ipairs(rcall('ZRANGE', K_LDAYS, base, base + today, 'BYSCORE', 'LIMIT', 0, 32)) do
    lane_past[#lane_past + 1] = tonumber(c)
    needed[#needed + 1] = tonumber(c)
  end
  for _, c in ipairs(rcall('ZRANGE', K_LDAYS, base + today, base + horizon_day, 'BYSCORE', 'LIMIT', 0, 400)) do
    lane_timeline[#lane_timeline + 1] = tonumber(c)
    needed[#needed + 1] = tonumber(c)
  end
  if want_next > 0 then
    for _, c in ipairs(rcall('ZRANGE', K_LDAYS, base, base + LANE - 1, 'BYSCORE', 'LIMIT', 0, 8)) do
      lane_first[#lane_first + 1] = tonumber(c)
      needed[#needed + 1] = tonumber(c)
    end
  end
end
local err = require_days(needed)
if err then return err end

-- Due now, and the oldest of them: the shards up to today.
local due, oldest = 0, -1
for _, day in ipairs(past) do
  local shard = shard_of_day[tonumber(day)]
  due = due + rcall('ZCOUNT', shard, '-inf', now)
  if oldest < 0 then
    local top = rcall('ZRANGE', shard, 0, 0, 'WITHSCORES')
    if #top > 0 and tonumber(top[2]) <= now then oldest = tonumber(top[2]) end
  end
end

-- The timeline: jobs due in each bucket from now on (a shard holds one UTC day: a bucket
-- counts in each shard it overlaps).
for _, code in ipairs(lane_past) do
  local shard = shard_of_day[code]
  due = due + rcall('ZCOUNT', shard, '-inf', now)
  local top = rcall('ZRANGE', shard, 0, 0, 'WITHSCORES')
  if #top > 0 and tonumber(top[2]) <= now and (oldest < 0 or tonumber(top[2]) < oldest) then oldest = tonumber(top[2]) end
end

for _, code in ipairs(lane_timeline) do timeline_days[#timeline_days + 1] = code end
local counts = {}
for i = 1, buckets do
  local from, to = now + (i - 1) * width, now + i * width
  local c = 0
  for _, code in ipairs(timeline_days) do
    local start = day_start(code % LANE)
    if start < to and start + DAY_MS > from then
      c = c + rcall('ZCOUNT', shard_of_day[code], '(' .. from, to)
    end
  end
  counts[i] = c
end

-- The next jobs by runAt: the first shards in day order.
local next_jobs, ids = {}, {}
for _, day in ipairs(first) do
  if #ids >= want_next then break end
  local part = rcall('ZRANGE', shard_of_day[tonumber(day)], 0, want_next - #ids - 1, 'WITHSCORES')
  for i = 1, #part, 2 do
    ids[#ids + 1] = part[i]
    next_jobs[#next_jobs + 1] = part[i]
    next_jobs[#next_jobs + 1] = part[i + 1]
  end
end
-- The lanes' first jobs too, then all of them in runAt order, the first want_next kept.
if #lane_first > 0 then
  local all = {}
  for i = 1, #ids do all[i] = { next_jobs[2 * i - 1], tonumber(next_jobs[2 * i]), next_jobs[2 * i] } end
  for _, code in ipairs(lane_first) do
    local part = rcall('ZRANGE', shard_of_day[code], 0, want_next - 1, 'WITHSCORES')
    for i = 1, #part, 2 do all[#all + 1] = { part[i], tonumber(part[i + 1]), part[i + 1] } end
  end
  table.sort(all, function(a, b) return a[2] < b[2] end)
  ids, next_jobs = {}, {}
  for i = 1, math.min(#all, want_next) do
    ids[i] = all[i][1]
    next_jobs[#next_jobs + 1] = all[i][1]
    next_jobs[#next_jobs + 1] = all[i][3]
  end
end
local listed = {}
if #ids > 0 then
  local recs = rcall('HMGET', K_JOBS, unpack(ids))
  for i = 1, #ids do
    listed[#listed + 1] = next_jobs[2 * i - 1]
    listed[#listed + 1] = next_jobs[2 * i]
    listed[#listed + 1] = recs[i] or ''
  end
end

-- In flight, soonest lease deadline first, with the token of the attempt holding each.
local running = {}
if want_inflight > 0 then
  local part = rcall('ZRANGE', K_INFLIGHT, 0, want_inflight - 1, 'WITHSCORES')
  local in_ids = {}
  for i = 1, #part, 2 do in_ids[#in_ids + 1] = part[i] end
  if #in_ids > 0 then
    local tokens = rcall('HMGET', K_LEASES, unpack(in_ids))
    local recs = rcall('HMGET', K_JOBS, unpack(in_ids))
    for i = 1, #in_ids do
      running[#running + 1] = in_ids[i]
      running[#running + 1] = part[2 * i]
      running[#running + 1] = tokens[i] or ''
      running[#running + 1] = recs[i] or ''
    end
  end
end

-- Held back by their groups: the first ones, in gheld's order (a group's jobs together, in
-- (priority, runAt) order; a lane's member keeps its runAt to 10 ms).
local held = {}
if want_next > 0 then
  local members = rcall('ZRANGE', K_GHELD, 0, want_next - 1)
  local held_ids, groups_of, runs = {}, {}, {}
  for _, m in ipairs(members) do
    local g, run, id = held_split(m)
    held_ids[#held_ids + 1] = id
    groups_of[#groups_of + 1] = g
    runs[#runs + 1] = run
  end
  if #held_ids > 0 then
    local recs = rcall('HMGET', K_JOBS, unpack(held_ids))
    for i = 1, #held_ids do
      held[#held + 1] = held_ids[i]
      held[#held + 1] = runs[i]
      held[#held + 1] = groups_of[i]
      held[#held + 1] = recs[i] or ''
    end
  end
end

return { now, due, oldest, counts, listed, running, rcall('HLEN', K_JOBS), rcall('ZCARD', K_INFLIGHT),
  rcall('ZCARD', K_DEAD), rcall('ZCARD', K_GHELD), held }
