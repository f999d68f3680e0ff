-- fence.lua: raises a recurring schedule's tick record in this partition to at least a time, so
-- that the enqueue script refuses every tick of it up to then (a deleted schedule, or one moved
-- to another topic, whose old definition a replica may still be about to fire).
-- KEYS: see lib.lua (only ticks is used)
-- ARGV[A] = schedule name, ARGV[A+1] = epoch ms: the record becomes max(record, this)
-- Returns the record after the call.
local name, fence = ARGV[A], tonumber(ARGV[A + 1])
local last = tonumber(rcall('HGET', K_TICKS, name))
if not last or last < fence then
  rcall('HSET', K_TICKS, name, ARGV[A + 1])
  return fence
end
return last
