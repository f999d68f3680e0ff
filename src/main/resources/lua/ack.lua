-- ack.lua: completes jobs whose observer returned normally: deletes lease, in-flight entry and record.
-- KEYS: see lib.lua (no day shards)
-- ARGV[A] = n; then n pairs: id, lease token
-- Returns {acked count, stale id, ...}: a stale id's lease is held by another attempt (its lease
-- expired and it was retaken), so that attempt's state is left as it is.
local n = tonumber(ARGV[A])
local ids = {}
for i = 1, n do ids[i] = ARGV[A + (i - 1) * 2 + 1] end
local done, stale = {}, {}
for i = 1, n, CHUNK do
  local tokens = rcall('HMGET', K_LEASES, unpack(ids, i, math.min(i + CHUNK - 1, n)))
  for j = 1, #tokens do
    local k = i + j - 1
    if tokens[j] == ARGV[A + (k - 1) * 2 + 2] then done[#done + 1] = ids[k] else stale[#stale + 1] = ids[k] end
  end
end
if #done > 0 then
  variadic('ZREM', K_INFLIGHT, done)
  variadic('HDEL', K_LEASES, done)
  variadic('HDEL', K_JOBS, done)
end
local out = { #done }
for _, id in ipairs(stale) do out[#out + 1] = id end
return out
