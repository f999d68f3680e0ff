-- purge.lua: deletes one dead job for good.
-- KEYS: see lib.lua (no day shards)
-- ARGV[A] = id
-- Returns 1 deleted, 0 not dead.
if purge_dead(ARGV[A]) then return 1 end
return 0
