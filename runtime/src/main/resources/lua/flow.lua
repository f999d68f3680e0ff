-- flow.lua: flow control of one partition: an operator's pause or resume of taking its jobs, set
-- or clear of its topic's rate limit, concurrency cap or group rate limit; or a hold, when the
-- topic's HTTP target asked for no call before a time (429/503 with Retry-After). Java runs it
-- on every partition of the topic.
-- KEYS: see lib.lua (no day shards)
-- ARGV[A]   = what: 'pause', 'resume', 'rate' (set the limit to ARGV[A+1]), 'unrate' (clear it:
--             the replicas' configuration applies again), 'cap' (set the concurrency cap to
--             ARGV[A+1]), 'uncap' (clear it), 'grouprate' (set the group rate limit to ARGV[A+1]),
--             'ungrouprate' (clear it) or 'hold' (until ARGV[A+1])
-- ARGV[A+1] = 'rate': the topic's rate limit, jobs/s over all its partitions; 'cap': the most jobs
--             of the topic in flight at once over all its partitions; 'grouprate': jobs/s per group;
--             'hold': "+<ms>" a delay from Redis now, or "<epoch ms>"; else ''
-- ARGV[A+2] = wake channel
-- Returns {paused since (Redis ms) or -1, the rate limit set by an operator or '', held until
-- (Redis ms) or -1, the concurrency cap set by an operator or '', jobs in flight in the
-- partition, the group rate limit set by an operator or ''} after the change.
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
elseif what == 'cap' or what == 'uncap' then
  if what == 'cap' then rcall('SET', K_MAX_INFLIGHT, ARGV[A + 1]) else rcall('DEL', K_MAX_INFLIGHT) end
  -- Takers the old cap held back sleep until a slot frees: a new cap may let them take now (one
  -- that is lower only holds the next takes back; jobs in flight run to their end). The pace of a
  -- rate limit is left as it is.
  free_slots(ARGV[A + 2])
elseif what == 'grouprate' or what == 'ungrouprate' then
  if what == 'grouprate' then rcall('SET', K_GROUP_RATE, ARGV[A + 1]) else rcall('DEL', K_GROUP_RATE) end
  -- The groups' pace kept under the old limit (turns given far ahead under a slow one) must not
  -- hold the new one up. Jobs already put off keep the time they were given; met then, they pass
  -- the new limit like any other.
  rcall('DEL', K_GROUP_TAT)
elseif what == 'hold' then
  -- Only ever later: two answers of the target (on two replicas, say) hold until the later one.
  -- Nobody is woken: a taker learns of the hold at its next take, which then leases nothing and
  -- tells it to come back at its end.
  local now, v = now_ms(), ARGV[A + 1]
  local till = string.sub(v, 1, 1) == '+' and now + tonumber(string.sub(v, 2)) or tonumber(v)
  local held = tonumber(rcall('GET', K_HELD))
  if till > now and (not held or till > held) then
    rcall('SET', K_HELD, string.format('%d', till), 'PX', till - now)
  end
else
  return redis.error_reply('flow.lua: unknown operation ' .. what)
end
if changed then
  -- The pace kept under the old limit (up to one old interval ahead) does not hold the new one up.
  rcall('DEL', K_RATE_TAT)
  -- Takers sleep while paused, or until the old limit let them take again: wake them, so that due
  -- jobs go at once (a lost message is made up for by the safety-net poll).
  -- The earlier of next and lnext: a partition may hold only lane jobs.
  local heads = rcall('MGET', K_NEXT, K_LNEXT)
  local head, lhead = tonumber(heads[1]), tonumber(heads[2])
  if lhead and (not head or lhead < head) then head = lhead end
  if head then wake(ARGV[A + 2], string.format('%d', head)) end
end
local flow = rcall('MGET', K_PAUSED, K_RATE, K_HELD, K_MAX_INFLIGHT, K_GROUP_RATE)
return { flow[1] and tonumber(flow[1]) or -1, flow[2] or '', flow[3] and tonumber(flow[3]) or -1, flow[4] or '',
  rcall('ZCARD', K_INFLIGHT), flow[5] or '' }
