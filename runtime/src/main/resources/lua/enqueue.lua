-- enqueue.lua: idempotent insert of a batch of jobs into their day shards, in one atomic step.
-- KEYS: see lib.lua (jobs, days, next, inflight, leases, dead, day shards of the jobs' runAt days)
-- ARGV[A]   = wake channel (published to when a job becomes the earliest of the partition)
-- ARGV[A+1] = trace: W3C context of the enqueue (see lib.lua), '' when it ran in no trace
-- ARGV[A+2] = dedup window ms of the topic, 0 = none: an id that succeeded within it is not
--             scheduled again (reply: state c, the time it succeeded in place of runAt)
-- ARGV[A+3] = recurring schedule name when this call fires one of its ticks, else ''
-- ARGV[A+4] = that tick, epoch ms: when the schedule already fired (or skipped) a tick at or
--             after it into this partition, nothing is written and the reply is {now, -1};
--             otherwise the tick is recorded with the jobs (n = 0 records a skipped tick)
-- ARGV[A+5] = n, the number of jobs; then 5 values per job:
--             id, mode ('d' = runAt is Redis now + value, 'a' = runAt is value), value ms,
--             maxAttempts (0 = topic default), payload json
-- Returns {now, then 4 values per job: created (1) or already there (0), runAt ms (for state c:
--          when it succeeded), attempts, state letter (s, i, d, or c = succeeded)}, and last
--          'relist' when the topic was forgotten since the partition emptied (see forget.lua):
--          Java lists the topic again before it answers.
-- Errors: DQNEEDDAY (see lib.lua) when a runAt falls on a day whose shard was not passed.
local channel = ARGV[A]
local trace = ARGV[A + 1]
local window = tonumber(ARGV[A + 2])
local recurring = ARGV[A + 3]
local n = tonumber(ARGV[A + 5])
local now = now_ms()
local J = A + 6 -- first job's values

-- A recurring tick runs once: every replica fires it, the first one records it in this
-- partition (the tick's job lives here, so the record and the job are written together).
if recurring ~= '' then
  local last = tonumber(rcall('HGET', K_TICKS, recurring))
  if last and last >= tonumber(ARGV[A + 4]) then return { now, -1 } end
end

local ids = {}
for i = 1, n do ids[i] = ARGV[J + (i - 1) * 5] end
-- One HMGET answers "does it exist" for the whole batch (idempotency by topic + id).
local existing = {}
for i = 1, n, CHUNK do
  local part = rcall('HMGET', K_JOBS, unpack(ids, i, math.min(i + CHUNK - 1, n)))
  for j = 1, #part do existing[i + j - 1] = part[j] end
end
-- With a dedup window, one ZMSCORE per chunk finds the ids that succeeded lately: within the
-- window they count as existing (succeeded); past it they are free, and their entry goes now
-- rather than wait for an ack's trim (a scheduled id is never in done).
local succeeded, forget = {}, {}
if window > 0 then
  for i = 1, n, CHUNK do
    local part = rcall('ZMSCORE', K_DONE, unpack(ids, i, math.min(i + CHUNK - 1, n)))
    for j = 1, #part do
      local k = i + j - 1
      if not existing[k] and part[j] then
        if remembered(part[j], window, now) then succeeded[k] = tonumber(part[j]) else forget[#forget + 1] = ids[k] end
      end
    end
  end
end

-- First pass decides every runAt and checks the shards: nothing is written before it passes.
local run_at, day, days, seen = {}, {}, {}, {}
for i = 1, n do
  local base = J + (i - 1) * 5
  if not existing[i] and not succeeded[i] and not seen[ids[i]] then
    seen[ids[i]] = i
    local v = tonumber(ARGV[base + 2])
    run_at[i] = ARGV[base + 1] == 'd' and now + v or v
    day[i] = day_of(run_at[i])
    days[#days + 1] = day[i]
  end
end
local err = require_days(days)
if err then return err end

local out = { now }
local fields, by_shard, earliest = {}, {}, nil
for i = 1, n do
  local base = J + (i - 1) * 5
  local id = ids[i]
  if run_at[i] then
    local r = { run_at = run_at[i], trace = trace, attempts = 0, max = tonumber(ARGV[base + 3]), err = '', payload = ARGV[base + 4] }
    fields[#fields + 1] = id
    fields[#fields + 1] = encode(r)
    local shard = shard_of_day[day[i]]
    local list = by_shard[shard]
    if not list then
      list = {}
      by_shard[shard] = list
      rcall('ZADD', K_DAYS, day[i], day[i])
    end
    list[#list + 1] = r.run_at
    list[#list + 1] = id
    if not earliest or r.run_at < earliest then earliest = r.run_at end
    out[#out + 1] = 1
    out[#out + 1] = r.run_at
    out[#out + 1] = 0
    out[#out + 1] = 's'
  elseif succeeded[i] then
    out[#out + 1] = 0
    out[#out + 1] = succeeded[i]
    out[#out + 1] = 0
    out[#out + 1] = 'c'
  else
    -- Already there: from Redis before this call, or earlier in this same batch.
    local r, state
    if existing[i] then
      r, state = decode(existing[i]), state_of(id)
    else
      r, state = { run_at = run_at[seen[id]], attempts = 0 }, 's'
    end
    out[#out + 1] = 0
    out[#out + 1] = r.run_at
    out[#out + 1] = r.attempts
    out[#out + 1] = state
  end
end

if recurring ~= '' then rcall('HSET', K_TICKS, recurring, ARGV[A + 4]) end
if #forget > 0 then variadic('ZREM', K_DONE, forget) end
if #fields > 0 then
  variadic('HSET', K_JOBS, fields)
  for shard, list in pairs(by_shard) do variadic('ZADD', shard, list) end
  local head = tonumber(rcall('GET', K_NEXT))
  if not head and forgotten_since() then out[#out + 1] = 'relist' end
  if not head or earliest < head then
    rcall('SET', K_NEXT, earliest)
    wake(channel, earliest)
  end
end
return out
