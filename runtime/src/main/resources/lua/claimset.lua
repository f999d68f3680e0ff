-- claimset.lua: compare-and-set of claims (see claim.lua): each changes only while it still holds
-- the value its caller read, so that of two callers acting on one reading only the first changes
-- it (a stale claim dropped, a pending one marked done, a stale one taken over).
-- KEYS: see lib.lua (no day shards), then the claims key
-- ARGV[A] = n (at most a batch, 1000), then n (id, expected claim, new claim) triples; a new
--           claim '' deletes it
-- Returns one 1 (changed) or 0 (it held something else) per triple.
local n = tonumber(ARGV[A])
local out = {}
for i = 1, n do
  local at = A + 1 + (i - 1) * 3
  local id, expected, new = ARGV[at], ARGV[at + 1], ARGV[at + 2]
  if rcall('HGET', K_CLAIMS, id) == expected then
    if new == '' then rcall('HDEL', K_CLAIMS, id) else rcall('HSET', K_CLAIMS, id, new) end
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
