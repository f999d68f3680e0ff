-- schedput.lua: writes a recurring schedule's definition only if it is still the one the caller
-- read (compare and set). PUT, pause and resume read a definition, change it and write it back;
-- two replicas doing that at once must not lose one of the changes (a PUT must not undo a pause
-- made meanwhile, a pause not bring an old definition back): the one whose read is stale writes
-- nothing, reads again and redoes its change on what it finds.
-- KEYS[1] -> schedules HASH schedule name -> definition (JSON). Not lib.lua's partition keys: the
--            prelude sees KEYS[1] as "jobs" and ARGV[1] = 0 day shards, and nothing here uses them.
-- ARGV[A]   = schedule name
-- ARGV[A+1] = '1' when the caller read a definition, '0' when it read none
-- ARGV[A+2] = the definition it read ('' when none)
-- ARGV[A+3] = the definition to write
-- Returns 1 when written as a new schedule, 0 when it replaced the one read, -1 when the stored
-- definition is no longer the one read (nothing written).
local name = ARGV[A]
local current = rcall('HGET', KEYS[1], name)
if ARGV[A + 1] == '1' then
  if current ~= ARGV[A + 2] then return -1 end
elseif current then
  return -1
end
rcall('HSET', KEYS[1], name, ARGV[A + 3])
if current then return 0 end
return 1
