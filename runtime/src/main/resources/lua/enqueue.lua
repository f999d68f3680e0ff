-- enqueue.lua: idempotent insert of a batch of jobs into their day shards, in one atomic step.
-- KEYS: see lib.lua (jobs, days, next, inflight, leases, dead, day shards of the jobs' runAt days)
-- ARGV[A]   = wake channel (published to when a job becomes the earliest of the partition)
-- ARGV[A+1] = trace: W3C context of the enqueue (see lib.lua), '' when it ran in no trace
-- ARGV[A+2] = n, the number of jobs; then 5 values per job:
--             id, mode ('d' = runAt is Redis now + value, 'a' = runAt is value), value ms,
--             maxAttempts (0 = topic default), payload json
-- Returns {now, then 4 values per job: created (1) or already there (0), runAt ms, attempts,
--          state letter (s, i, d)}.
-- Errors: DQNEEDDAY (see lib.lua) when a runAt falls on a day whose shard was not passed.
local channel = ARGV[A]
local trace = ARGV[A + 1]
local n = tonumber(ARGV[A + 2])
local now = now_ms()

local ids = {}
for i = 1, n do ids[i] = ARGV[A + 3 + (i - 1) * 5] end
-- One HMGET answers "does it exist" for the whole batch (idempotency by topic + id).
local existing = {}
for i = 1, n, CHUNK do
  local part = rcall('HMGET', K_JOBS, unpack(ids, i, math.min(i + CHUNK - 1, n)))
  for j = 1, #part do existing[i + j - 1] = part[j] end
end

-- First pass decides every runAt and checks the shards: nothing is written before it passes.
local run_at, day, days, seen = {}, {}, {}, {}
for i = 1, n do
  local base = A + 3 + (i - 1) * 5
  if not existing[i] and not seen[ids[i]] then
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
  local base = A + 3 + (i - 1) * 5
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

if #fields > 0 then
  variadic('HSET', K_JOBS, fields)
  for shard, list in pairs(by_shard) do variadic('ZADD', shard, list) end
  local head = tonumber(rcall('GET', K_NEXT))
  if not head or earliest < head then
    rcall('SET', K_NEXT, earliest)
    wake(channel, earliest)
  end
end
return out
