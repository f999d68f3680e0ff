-- take.lua: leases up to N due jobs of a partition to the caller, oldest day shard first, and
-- acks the caller's jobs that completed since its last take (one script call instead of two).
-- KEYS: see lib.lua; the day shards passed must include every non-empty day up to today
--       (Java passes yesterday, today, tomorrow and the older days it learnt from DQNEEDDAY).
-- ARGV[A]   = N, the most jobs to take (the caller's free worker slots)
-- ARGV[A+1] = lease ms (lease deadline = Redis now + lease)
-- ARGV[A+2] = lease token prefix, unique per call; job i of the reply gets token prefix..i
-- ARGV[A+3] = deadline: Redis time (ms) after which this call leases nothing, 0 = none. The
--             caller stops waiting for the reply at about twice that; a call Redis runs later
--             (stuck behind a CLIENT PAUSE, a slow script, a full pool) must not lease jobs to a
--             token nobody holds: they would sit in flight until their lease expired, and lose
--             an attempt.
-- ARGV[A+4] = dedup window ms of the topic, 0 = none (the carried acks remember their ids)
-- ARGV[A+5] = m, acks carried by this call; then m pairs: id, lease token
-- Returns {now, next, s, stale ack id 1..s, id1, record1, id2, record2, ...}: next = the
-- earliest runAt still scheduled after this take (-1 when none).
-- Errors: DQNEEDDAY (lib.lua), raised before anything is written (acks included).
local limit = tonumber(ARGV[A])
local lease_ms = tonumber(ARGV[A + 1])
local prefix = ARGV[A + 2]
local take_deadline = tonumber(ARGV[A + 3])
local now = now_ms()
if take_deadline > 0 and now > take_deadline then limit = 0 end
local today = day_of(now)

-- "next" is a lower bound of every runAt in the partition (every script that schedules a job
-- lowers it; this one sets it exactly).
local head = tonumber(rcall('GET', K_NEXT))
local due = head and head <= now and limit > 0
-- Fast path, the usual case under load: when the head falls on today no older shard holds a
-- job, and today's first job is the earliest of all.
local fast = due and day_of(head) == today
local wanted = {}
if fast then
  if not shard_of_day[today] then return redis.error_reply('DQNEEDDAY ' .. string.format('%d', today)) end
elseif due then
  -- At most 32 shards per call: a backlog spread over more past days is taken over several calls.
  local days = rcall('ZRANGEBYSCORE', K_DAYS, '-inf', today, 'LIMIT', 0, 32)
  for i = 1, #days do wanted[i] = tonumber(days[i]) end
  local err = require_days(wanted)
  if err then return err end
end

local stale = ack_leases(A + 6, tonumber(ARGV[A + 5]), tonumber(ARGV[A + 4]), now)
local out = { now, head or -1, #stale }
for _, id in ipairs(stale) do out[#out + 1] = id end
if not due then return out end

local taken = {}
local next_due = -2 -- unknown: look it up below
if fast then
  local shard = shard_of_day[today]
  taken = rcall('ZRANGEBYSCORE', shard, '-inf', now, 'LIMIT', 0, limit)
  if #taken > 0 then variadic('ZREM', shard, taken) end
  local top = rcall('ZRANGE', shard, 0, 0, 'WITHSCORES')
  if #top > 0 then
    next_due = tonumber(top[2])
    rcall('SET', K_NEXT, next_due)
  else
    rcall('ZREM', K_DAYS, today)
  end
else
  for _, day in ipairs(wanted) do
    local shard = shard_of_day[day]
    local want = limit - #taken
    local ids = rcall('ZRANGEBYSCORE', shard, '-inf', now, 'LIMIT', 0, want)
    for i = 1, #ids do taken[#taken + 1] = ids[i] end
    if #ids > 0 then variadic('ZREM', shard, ids) end
    if rcall('ZCARD', shard) == 0 then rcall('ZREM', K_DAYS, day) end
    -- Stop when the limit is reached, or at today's shard (later days hold nothing due).
    if #ids == want or day == today then break end
  end
end

if next_due == -2 then
  -- The smallest runAt of the oldest non-empty shard. The index only lists non-empty shards
  -- (every script that empties one drops it), so one look is enough.
  next_due = -1
  local first = rcall('ZRANGE', K_DAYS, 0, 0)
  if #first > 0 then
    local day = tonumber(first[1])
    local shard = shard_of_day[day]
    local top = shard and rcall('ZRANGE', shard, 0, 0, 'WITHSCORES') or {}
    if #top > 0 then
      next_due = tonumber(top[2])
    else
      next_due = day_start(day) -- a lower bound is enough: a taker then wakes, and learns more
    end
    rcall('SET', K_NEXT, next_due)
  else
    rcall('DEL', K_NEXT)
  end
end
out[2] = next_due

if #taken > 0 then
  local deadline = now + lease_ms
  local inflight, leases = {}, {}
  for i, id in ipairs(taken) do
    inflight[#inflight + 1] = deadline
    inflight[#inflight + 1] = id
    leases[#leases + 1] = id
    leases[#leases + 1] = prefix .. i
  end
  variadic('ZADD', K_INFLIGHT, inflight)
  variadic('HSET', K_LEASES, leases)
  -- Keep "leasenext" a lower bound of every lease deadline: the safety-net poll reads it with
  -- "next", in the same MGET, to find expired leases in any partition within a poll.
  local lease_next = tonumber(rcall('GET', K_LEASE_NEXT))
  if not lease_next or deadline < lease_next then rcall('SET', K_LEASE_NEXT, deadline) end
  for i = 1, #taken, CHUNK do
    local part = { unpack(taken, i, math.min(i + CHUNK - 1, #taken)) }
    local recs = rcall('HMGET', K_JOBS, unpack(part))
    for j = 1, #part do
      out[#out + 1] = part[j]
      out[#out + 1] = recs[j] or ''
    end
  end
end
return out
