-- fence.lua: raises a recurring schedule's tick record in this partition to at least a time, so
-- that the enqueue script refuses every tick of it up to then (a deleted schedule, or one moved
-- to another topic, whose old definition a replica may still be about to fire).
-- KEYS: see lib.lua (only ticks is used)
-- ARGV[A] = schedule name, ARGV[A+1] = epoch ms: the record becomes max(record, this)
-- ARGV[A+2] = '1' when the schedule is deleted: its field '<name>:job' (the job of the last tick
--             it enqueued here, see enqueue.lua's overlap check) goes too, so nothing of it stays
--             behind but the record, which must fence its ticks off; absent or '0' keeps the field
--             (a paused schedule still checks it when resumed)
-- Returns the record after the call.
local name, fence = ARGV[A], tonumber(ARGV[A + 1])
if ARGV[A + 2] == '1' then rcall('HDEL', K_TICKS, name .. ':job') end
local last = tonumber(rcall('HGET', K_TICKS, name))
if not last or last < fence then
  rcall('HSET', K_TICKS, name, ARGV[A + 1])
  return fence
end
return last
