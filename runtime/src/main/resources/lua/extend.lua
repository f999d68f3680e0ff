-- extend.lua: heartbeat; pushes the lease deadline of running jobs to Redis now + lease.
-- KEYS: see lib.lua (no day shards)
-- ARGV[A] = lease ms, ARGV[A+1] = n; then n pairs: id, lease token
-- Returns {the ids whose lease is no longer theirs (expired and reclaimed, or retaken), the ids
-- among theirs whose cancel was asked (cancel.lua): the holder's backstop for a lost wake-up}.
-- A cancelled job's lease is extended like any: its holder ends the attempt, which removes it.
local deadline = now_ms() + tonumber(ARGV[A])
local keep, lost, cancelled = by_lease(A + 2, tonumber(ARGV[A + 1]))
local scored = {}
for _, id in ipairs(keep) do
  scored[#scored + 1] = deadline
  scored[#scored + 1] = id
end
for i = 1, #scored, CHUNK do rcall('ZADD', K_INFLIGHT, 'XX', unpack(scored, i, math.min(i + CHUNK - 1, #scored))) end
return { lost, cancelled }
