-- revive.lua: puts a dead job back to scheduled, due at Redis now, with its attempts and lost
-- attempts reset.
-- KEYS: see lib.lua; the day shard of Redis now
-- ARGV[A] = id, ARGV[A+1] = wake channel
-- Returns {runAt} when revived, {} when the id is not dead.
local id = ARGV[A]
if not rcall('ZSCORE', K_DEAD, id) then return {} end
local now = now_ms()
local err = require_days({ day_of(now) })
if err then return err end
revive_dead(id, now, ARGV[A + 1])
return { now }
