-- claim.lua: claims ids in their home partition (the partition of the id, where every enqueue of
-- an id meets whatever its group) for jobs that their group puts in another partition of the
-- topic, so that an id is one live job over all partitions (see lib.lua's K_CLAIMS).
-- KEYS: see lib.lua (no day shards), then the claims key
-- ARGV[A]   = the partition (index) the jobs go to
-- ARGV[A+1] = n (a batch's jobs of one home: at most a batch, 1000), then n (id, group) pairs
-- Returns {now, then 2 values per id:
--          0 and the claim written, "<partition>:<now>:<group>" (the id is the caller's to enqueue
--            there; a claim of that same partition is written again, pending);
--          1 and the job's group ('' = none) when the id is a job here, scheduled or in flight
--            (nothing written; a dead one does not count: an enqueue revives a dead id anew);
--          2 and the claim found when another partition claimed the id (nothing written: Java
--            checks whether its job lives there)}
local q = ARGV[A] .. ':'
local n = tonumber(ARGV[A + 1])
local now = now_ms()
local out = { now }
for i = 1, n do
  local id, group = ARGV[A + 2 * i], ARGV[A + 2 * i + 1]
  local rec = rcall('HGET', K_JOBS, id)
  local claim = rcall('HGET', K_CLAIMS, id)
  if rec and not rcall('ZSCORE', K_DEAD, id) then
    out[#out + 1] = 1
    out[#out + 1] = group_of(rec)
  elseif claim and string.sub(claim, 1, #q) ~= q then
    out[#out + 1] = 2
    out[#out + 1] = claim
  else
    claim = q .. string.format('%d', now) .. ':' .. group
    rcall('HSET', K_CLAIMS, id, claim)
    out[#out + 1] = 0
    out[#out + 1] = claim
  end
end
return out
