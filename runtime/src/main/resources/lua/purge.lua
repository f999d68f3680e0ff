-- purge.lua: deletes one dead job for good.
-- KEYS: see lib.lua (no day shards)
-- ARGV[A] = id
-- Returns 1 deleted, 0 not dead.
local id = ARGV[A]
if rcall('ZREM', K_DEAD, id) == 0 then return 0 end
rcall('HDEL', K_JOBS, id)
-- A success remembered from before this job was enqueued (by a process without the dedup
-- window) must not answer for an id that is now free.
rcall('ZREM', K_DONE, id)
return 1
