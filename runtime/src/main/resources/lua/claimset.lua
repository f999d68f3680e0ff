-- claimset.lua: compare-and-set of claims (see claim.lua): each changes only while it still holds
-- the value its caller read, so that of two callers acting on one reading only the first changes
-- it (a stale claim dropped, a pending one marked done, a stale one taken over).
-- KEYS: see lib.lua (no day shards), then the claims key
-- ARGV[A] = n (at most a batch, 1000), then n (id, expected claim, new claim) triples; a new
--           claim '' deletes it
-- ARGV[A+1+3n] = m (absent = 0), then m ids among the triples' whose new job exists in the
--           partition their claim names (the enqueue's done step): when the claim of one changes,
--           a dead job of that id here goes in the same step (its record and its dead-set entry,
--           as an enqueue of the id here replaces it; its dead-job callback, if any, keeps its own
--           copy), so that neither a look by id nor a requeue from the dead set meets it. Only
--           then: a claim that a refused or lost enqueue leaves behind never takes the dead job
--           with it (claim.lua leaves it in place).
--           The sweep and the other looks at a claim whose job they found in its partition, live or
--           dead, pass it too (IdClaims.Healing): the done step again, for one that was lost; a
--           triple whose new claim is the one expected then writes nothing but that removal.
-- Returns one 1 (changed, or held as expected) or 0 (it held something else) per triple.
local n = tonumber(ARGV[A])
local replaced = {}
local at_m = A + 1 + 3 * n
for i = 1, tonumber(ARGV[at_m] or '0') do replaced[ARGV[at_m + i]] = true end
local out = {}
for i = 1, n do
  local at = A + 1 + (i - 1) * 3
  local id, expected, new = ARGV[at], ARGV[at + 1], ARGV[at + 2]
  if rcall('HGET', K_CLAIMS, id) == expected then
    if new == '' then rcall('HDEL', K_CLAIMS, id) elseif new ~= expected then rcall('HSET', K_CLAIMS, id, new) end
    if replaced[id] and rcall('ZREM', K_DEAD, id) == 1 then rcall('HDEL', K_JOBS, id) end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
