-- revive.lua: puts a dead job back to scheduled, due at Redis now, with its attempts and lost
-- attempts reset.
-- KEYS: see lib.lua; the day shard of Redis now; with several partitions the claims key after it
-- (see lib.lua's K_CLAIMS)
-- ARGV[A] = id, ARGV[A+1] = wake channel
-- Returns {runAt} when revived, {} when the id is not dead, or {'claimed', now, claim} when another
-- partition claims the id (nothing written: Java checks whether that claim stands, see claim.lua).
local id = ARGV[A]
if not rcall('ZSCORE', K_DEAD, id) then return {} end
local now = now_ms()
if K_CLAIMS then
  local claim = rcall('HGET', K_CLAIMS, id)
  if claim then return { 'claimed', now, claim } end
end
local err = require_days({ code_of(decode(rcall('HGET', K_JOBS, id)).priority, day_of(now)) })
if err then return err end
revive_dead(id, now, ARGV[A + 1])
return { now }
