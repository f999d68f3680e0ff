-- claim.lua: claims ids in their home partition (the partition of the id, where every enqueue of
-- an id meets whatever its group) for jobs that their group puts in another partition of the
-- topic, so that an id is one live job over all partitions (see lib.lua's K_CLAIMS).
-- KEYS: see lib.lua (no day shards), then the claims key
-- ARGV[A]   = the partition (index) the jobs go to
-- ARGV[A+1] = n (a batch's jobs of one home: at most a batch, 1000), then n (id, group) pairs
-- Returns {now, then 2 values per id:
--          0 and the claim written, "<partition>:<ms>:<group>", ms = now, or one more than the ms
--            of the claim it replaces, so that no two claims of an id are equal (the id is the
--            caller's to enqueue there; a claim of that same partition is written again, pending);
--            a dead job of the id here stays until its new job exists: the enqueue's done step
--            (claimset.lua) removes it with the claim marked done, so that an enqueue refused,
--            failed or lost on its way (a crash between the two) leaves it dead, as it was
--            (meanwhile a requeue from the dead set leaves it alone: see lib.lua's revive_dead);
--          1 and the job's group ('' = none) when the id is a job here, scheduled or in flight
--            (nothing written);
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
  local dead = rec and rcall('ZSCORE', K_DEAD, id)
  if rec and not dead then
    out[#out + 1] = 1
    out[#out + 1] = group_of(rec)
  elseif claim and string.sub(claim, 1, #q) ~= q then
    out[#out + 1] = 2
    out[#out + 1] = claim
  else
    local ms = now
    if claim then
      local was = math.abs(tonumber(string.match(claim, '^[^:]*:(-?%d+):')))
      if was >= ms then ms = was + 1 end
    end
    claim = q .. string.format('%d', ms) .. ':' .. group
    rcall('HSET', K_CLAIMS, id, claim)
    out[#out + 1] = 0
    out[#out + 1] = claim
  end
end
return out
