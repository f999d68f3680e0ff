-- record-layouts.lua: the Redis memory per scheduled job and the Redis time per job taken and
-- acked under candidate layouts of a partition's records (issue 24), without delayq, so that the
-- layouts differ only in where the records live. Run by bench/record-layouts.sh, which starts its
-- own redis-server and prints the figures; by hand:
--   EVALSHA <sha> 0 <layout> fill <n> <buckets> <batch> <first id>   (ids first..first+batch-1)
--   EVALSHA <sha> 0 <layout> take <n> <buckets> <batch>              (returns how many it took)
-- Layouts (every one keeps the due shard, the in-flight set and the leases as delayq does):
--   today  the records in one hash per partition, id -> record (delayq's layout)
--   keys   the records in small hashes, one key per bucket of ids (a hash of the id mod buckets),
--          each small enough for Redis' listpack encoding; the bucket keys are named inside the
--          script, which delayq's scripts may not do (bench/RESULTS.md, "Memory per job: record
--          layouts")
--   blob   the records packed into the one hash per partition, one field per bucket of ids:
--          "\0<id>\1<record>" entries, found with a plain string search and cut out on ack
-- Jobs as the benchmark makes them: ids "0".."n-1", runAt spread over 10 s, 16-byte payload, the
-- record "<runAt base 36>\n<payload>" (25 bytes). Take and ack as delayq's taker does them: up to
-- <batch> due ids a call, moved to in-flight with a lease token each, their records read; then
-- acked: tokens checked, in-flight entry, lease and record deleted.
local layout, phase, n, nb, batch = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local rcall = redis.call
local SHARD, JOBS = 'dq:{t#0}:due:20261202', 'dq:{t#0}:jobs'
local INFLIGHT, LEASES = 'dq:{t#0}:inflight', 'dq:{t#0}:leases'
local byte, find, sub = string.byte, string.find, string.sub
local T0 = 1764633600000
local REC = 'mh7x3k2a\n"xxxxxxxxxxxxxx"'

local function bucket(id)
  local h = 0
  for i = 1, #id do h = (h * 31 + byte(id, i)) % 16777213 end
  return h % nb
end

if phase == 'fill' then
  local first = tonumber(ARGV[6])
  for i = first, math.min(first + batch - 1, n - 1) do
    local id = tostring(i)
    rcall('ZADD', SHARD, T0 + math.floor(i * 10000 / n), id)
    if layout == 'today' then
      rcall('HSET', JOBS, id, REC)
    elseif layout == 'keys' then
      rcall('HSET', JOBS .. ':' .. bucket(id), id, REC)
    else
      local f = bucket(id)
      rcall('HSET', JOBS, f, (rcall('HGET', JOBS, f) or '') .. '\0' .. id .. '\1' .. REC)
    end
  end
  return 0
end

-- take
local ids = rcall('ZRANGEBYSCORE', SHARD, '-inf', '+inf', 'LIMIT', 0, batch)
if #ids == 0 then return 0 end
rcall('ZREM', SHARD, unpack(ids))
local inflight, leases = {}, {}
for i, id in ipairs(ids) do
  inflight[#inflight + 1] = T0
  inflight[#inflight + 1] = id
  leases[#leases + 1] = id
  leases[#leases + 1] = 'tok' .. i
end
rcall('ZADD', INFLIGHT, unpack(inflight))
rcall('HSET', LEASES, unpack(leases))
local recs = {}
if layout == 'today' then
  recs = rcall('HMGET', JOBS, unpack(ids))
elseif layout == 'keys' then
  for i, id in ipairs(ids) do recs[i] = rcall('HGET', JOBS .. ':' .. bucket(id), id) end
else
  local fields = {}
  for i, id in ipairs(ids) do fields[i] = bucket(id) end
  local blobs = rcall('HMGET', JOBS, unpack(fields))
  for i, id in ipairs(ids) do
    local _, e = find(blobs[i], '\0' .. id .. '\1', 1, true)
    local t = find(blobs[i], '\0', e + 1, true)
    recs[i] = sub(blobs[i], e + 1, (t or 0) - 1)
  end
end
for i = 1, #ids do
  if not recs[i] then return redis.error_reply('no record for ' .. ids[i]) end
end

-- ack
local tokens = rcall('HMGET', LEASES, unpack(ids))
for i = 1, #ids do
  if tokens[i] ~= 'tok' .. i then return redis.error_reply('lease of ' .. ids[i]) end
end
rcall('ZREM', INFLIGHT, unpack(ids))
rcall('HDEL', LEASES, unpack(ids))
if layout == 'today' then
  rcall('HDEL', JOBS, unpack(ids))
elseif layout == 'keys' then
  for _, id in ipairs(ids) do rcall('HDEL', JOBS .. ':' .. bucket(id), id) end
else
  local fields = {}
  for i, id in ipairs(ids) do fields[i] = bucket(id) end
  local blobs = rcall('HMGET', JOBS, unpack(fields))
  local cur = {}
  for i, f in ipairs(fields) do
    if cur[f] == nil then cur[f] = blobs[i] end
  end
  for i, id in ipairs(ids) do
    local b = cur[fields[i]]
    local s, e = find(b, '\0' .. id .. '\1', 1, true)
    local t = find(b, '\0', e + 1, true)
    cur[fields[i]] = sub(b, 1, s - 1) .. (t and sub(b, t) or '')
  end
  local set, gone = {}, {}
  for f, b in pairs(cur) do
    if b == '' then
      gone[#gone + 1] = f
    else
      set[#set + 1] = f
      set[#set + 1] = b
    end
  end
  if #set > 0 then rcall('HSET', JOBS, unpack(set)) end
  if #gone > 0 then rcall('HDEL', JOBS, unpack(gone)) end
end
return #ids
