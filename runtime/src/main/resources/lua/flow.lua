-- flow.lua: an operator's flow control of one partition: pause or resume taking its jobs, set or
-- clear its topic's rate limit. Java runs it on every partition of the topic.
-- KEYS: see lib.lua (no day shards)
-- ARGV[A]   = what: 'pause', 'resume', 'rate' (set the limit to ARGV[A+1]) or 'unrate' (clear it:
--             the replicas' configuration applies again)
-- ARGV[A+1] = the topic's rate limit, jobs/s over all its partitions ('rate' only, else '')
-- ARGV[A+2] = wake channel
-- Returns {paused since (Redis ms) or -1, the rate limit set by an operator or ''} after the change.
local what = ARGV[A]
local changed = false
if what == 'pause' then
  -- A second pause keeps the time of the first.
  rcall('SET', K_PAUSED, now_ms(), 'NX')
elseif what == 'resume' then
  changed = rcall('DEL', K_PAUSED) == 1
elseif what == 'rate' then
  rcall('SET', K_RATE, ARGV[A + 1])
  changed = true
elseif what == 'unrate' then
  rcall('DEL', K_RATE)
  changed = true
else
  return redis.error_reply('flow.lua: unknown operation ' .. what)
end
if changed then
  -- The pace kept under the old limit (up to one old interval ahead) does not hold the new one up.
  rcall('DEL', K_RATE_TAT)
  -- Takers sleep while paused, or until the old limit let them take again: wake them, so that due
  -- jobs go at once (a lost message is made up for by the safety-net poll).
  local head = rcall('GET', K_NEXT)
  if head then wake(ARGV[A + 2], head) end
end
local flow = rcall('MGET', K_PAUSED, K_RATE)
return { flow[1] and tonumber(flow[1]) or -1, flow[2] or '' }
