-- purge.lua: deletes one dead job for good.
-- KEYS: see lib.lua (no day shards)
-- ARGV[A] = id
-- Returns 1 deleted, 0 not dead.
local id = ARGV[A]
if rcall('ZREM', K_DEAD, id) == 0 then return 0 end
rcall('HDEL', K_JOBS, id)
return 1
