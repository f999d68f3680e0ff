-- cbsettle.lua: the outcome of one try of a dead-job callback claimed by cbtake.lua.
-- KEYS: see lib.lua (no day shard)
-- ARGV[A]   = the callback ("<diedAt ms>:<job id>")
-- ARGV[A+1] = 'done' (delivered: forgotten), 'retry' (due again after the delay) or 'failed'
--             (its last try failed: moved from callbacks to cbfailed, its data kept for the dashboard)
-- ARGV[A+2] = retry delay ms (for 'retry')
-- ARGV[A+3] = the try's error, one line (for 'retry' and 'failed')
-- Returns 1 when it changed something, 0 when the callback was no longer pending (another replica
-- settled it first after this one's claim expired).
local member, outcome = ARGV[A], ARGV[A + 1]
if not rcall('ZSCORE', K_CALLBACKS, member) then return 0 end
if outcome == 'done' then
  rcall('ZREM', K_CALLBACKS, member)
  rcall('HDEL', K_CBDATA, member)
  return 1
end
local data = rcall('HGET', K_CBDATA, member)
local c1 = string.find(data, ',', 1, true)
local c2 = string.find(data, ',', c1 + 1, true)
local nl = string.find(data, '\n', c2 + 1, true)
rcall('HSET', K_CBDATA, member, string.sub(data, 1, c2) .. ARGV[A + 3] .. string.sub(data, nl))
local now = now_ms()
if outcome == 'failed' then
  rcall('ZREM', K_CALLBACKS, member)
  rcall('ZADD', K_CBFAILED, now, member)
else
  rcall('ZADD', K_CALLBACKS, now + tonumber(ARGV[A + 2]), member)
end
return 1
