-- cbsettle.lua: the outcome of one try of a dead-job callback claimed by cbtake.lua.
-- KEYS: see lib.lua (no day shard)
-- ARGV[A]   = the callback ("<diedAt ms>[.<n>]:<job id>", see lib.lua's bury)
-- ARGV[A+1] = 'done' (delivered: forgotten), 'retry' (due again after the delay) or 'failed'
--             (its last try failed: moved from callbacks to cbfailed, its data kept for the dashboard)
-- ARGV[A+2] = retry delay ms (for 'retry')
-- ARGV[A+3] = the try's error, one line (for 'retry' and 'failed')
-- ARGV[A+4] = the claim's tries (as cbtake.lua returned them): the claim token
-- ARGV[A+5] = how many failed callbacks the partition keeps (the newest; older ones go with their
--             data): its share of the dead set's cap (delayq.dead.max-jobs), 0 = no bound
-- ARGV[A+6] = how long one is kept, ms (delayq.dead.max-age), 0 = no bound
-- Returns 1 when it changed something, 0 when the callback was no longer pending or no longer this
-- claim's.
-- Whose claim it is: a claim that expired (a hung call) may settle after another replica claimed
-- the callback again. Its 'retry' would then rescore a callback being sent (a third copy), its
-- 'failed' would bury one the live claim then delivers; so both apply only while the tries in
-- cbdata are still the claim's. 'done' is always taken, from any claim: delivered is delivered,
-- even when a later claim already gave it up (it leaves cbfailed then).
local member, outcome = ARGV[A], ARGV[A + 1]
if outcome == 'done' then
  local n = rcall('ZREM', K_CALLBACKS, member) + rcall('ZREM', K_CBFAILED, member)
  rcall('HDEL', K_CBDATA, member)
  cb_next()
  return n > 0 and 1 or 0
end
if not rcall('ZSCORE', K_CALLBACKS, member) then return 0 end
local data = rcall('HGET', K_CBDATA, member)
if not data then return 0 end
local c1 = string.find(data, ',', 1, true)
if string.sub(data, 1, c1 - 1) ~= ARGV[A + 4] then return 0 end
local c2 = string.find(data, ',', c1 + 1, true)
local nl = string.find(data, '\n', c2 + 1, true)
rcall('HSET', K_CBDATA, member, string.sub(data, 1, c2) .. ARGV[A + 3] .. string.sub(data, nl))
local now = now_ms()
if outcome == 'failed' then
  rcall('ZREM', K_CALLBACKS, member)
  rcall('ZADD', K_CBFAILED, now, member)
  -- Each keeps a copy of its job's payload: past the bounds the oldest go, a few per call (each
  -- call adds one, so a few more than one bring an over-full set back under its cap).
  trim_cbfailed(tonumber(ARGV[A + 5]), tonumber(ARGV[A + 6]), now, 16)
else
  rcall('ZADD', K_CALLBACKS, now + tonumber(ARGV[A + 2]), member)
end
cb_next()
return 1
