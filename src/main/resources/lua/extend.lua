-- extend.lua: heartbeat; pushes the lease deadline of running jobs to Redis now + lease.
-- KEYS: see lib.lua (no day shards)
-- ARGV[A] = lease ms, ARGV[A+1] = n; then n pairs: id, lease token
-- Returns the ids whose lease is no longer theirs (expired and reclaimed, or retaken).
local deadline = now_ms() + tonumber(ARGV[A])
local n = tonumber(ARGV[A + 1])
local ids = {}
for i = 1, n do ids[i] = ARGV[A + (i - 1) * 2 + 2] end
local keep, lost = {}, {}
for i = 1, n, CHUNK do
  local tokens = rcall('HMGET', K_LEASES, unpack(ids, i, math.min(i + CHUNK - 1, n)))
  for j = 1, #tokens do
    local k = i + j - 1
    if tokens[j] == ARGV[A + (k - 1) * 2 + 3] then
      keep[#keep + 1] = deadline
      keep[#keep + 1] = ids[k]
    else
      lost[#lost + 1] = ids[k]
    end
  end
end
if #keep > 0 then
  for i = 1, #keep, CHUNK do rcall('ZADD', K_INFLIGHT, 'XX', unpack(keep, i, math.min(i + CHUNK - 1, #keep))) end
end
return lost
