-- bulk.lua: one step of a walk that cancels or reschedules a partition's scheduled jobs matching a
-- filter (POST /topics/{t}/jobs/cancel, /reschedule): the next fields of the jobs hash from an
-- HSCAN cursor (the hash's order, not runAt's: a job moved to another runAt is not met again),
-- each scheduled one that matches acted on as cancel.lua / reschedule.lua act on one
-- (lib.lua's cancel_scheduled / move_scheduled: held jobs and admitted slots included).
-- KEYS: see lib.lua; the day shards of the matching jobs' runAts, of the new runAt and of today (a
--       call without one of them fails with DQNEEDDAY naming them, before any write)
-- ARGV[A]   = 'c' cancel, 'r' reschedule
-- ARGV[A+1] = HSCAN cursor ('0' to start), ARGV[A+2] = HSCAN COUNT (bounds the call)
-- ARGV[A+3] = id prefix ('' = any), ARGV[A+4] = group ('' = any)
-- ARGV[A+5] = runAt from, ms ('' = no bound), ARGV[A+6] = runAt to, ms, inclusive ('' = none)
-- ARGV[A+7] = the new runAt, ms (reschedule; the same for every step of a walk, so a job HSCAN
--             returns twice, which it may when the hash shrinks meanwhile, is already there and
--             is left: none is acted on twice)
-- ARGV[A+8] = wake channel
-- ARGV[A+9] = a burial's callback flag and dead-set bounds (see lib.lua's bury); absent = '0'.
--             A job rescheduled after its expiresAt goes to dead instead (as reschedule.lua)
-- Returns {next HSCAN cursor ('0': the walk is done), jobs acted on, of them those that expired,
--          the ids their burials trimmed from the dead set (a list)}.
local mode, cursor, count = ARGV[A], ARGV[A + 1], ARGV[A + 2]
local prefix, group = ARGV[A + 3], ARGV[A + 4]
local from = ARGV[A + 5] ~= '' and tonumber(ARGV[A + 5]) or nil
local to = ARGV[A + 6] ~= '' and tonumber(ARGV[A + 6]) or nil
local run_at = tonumber(ARGV[A + 7])
local channel = ARGV[A + 8]
local scan = rcall('HSCAN', K_JOBS, cursor, 'COUNT', count)
local fields = scan[2]
local now = now_ms()
local picked, free, days = {}, {}, { day_of(now) }
for i = 1, #fields, 2 do
  local id = fields[i]
  if (prefix == '' or string.sub(id, 1, #prefix) == prefix) and not rcall('ZSCORE', K_INFLIGHT, id)
      and not rcall('ZSCORE', K_DEAD, id) then
    local r = decode(fields[i + 1])
    if (group == '' or r.group == group) and (not from or r.run_at >= from) and (not to or r.run_at <= to)
        and (mode == 'c' or r.run_at ~= run_at) then
      local held = is_held(id, r)
      picked[#picked + 1] = { id, r, held }
      if mode == 'r' then days[#days + 1] = code_of(r.priority, day_of(run_at)) end
      if not held then
        for _, c in ipairs(codes_of(r)) do days[#days + 1] = c end
        -- As reschedule.lua: a released job moved to a time already due keeps its admission.
        if mode == 'c' or run_at > now or expired_by(r, run_at) then free[#free + 1] = id end
      elseif r.priority ~= 3 then
        -- a held lane job: the plain shard of its runAt, for its plain twin (lib.lua's twins_of)
        days[#days + 1] = day_of(r.run_at)
      end
    end
  end
end
local err = require_days(days)
if err then return err end
-- The freed slots go to their groups' next held jobs once every picked job has been acted on: a
-- release in the middle of the loop could pick a held job later in this same list, which would
-- then be acted on as held while it sits in today's shard, admitted (a job in two places).
local admitted = admitted_of(free)
local expired, trimmed = 0, {}
for _, p in ipairs(picked) do
  local id, r, held = p[1], p[2], p[3]
  if mode == 'c' then
    cancel_scheduled(id, r, held, {}, now, channel)
  elseif expired_by(r, run_at) then
    cancel_scheduled(id, r, held, {}, now, channel)
    for _, t in ipairs(bury_expired(id, r, now, ARGV[A + 9] or '0', 'rescheduled past expiresAt')) do
      trimmed[#trimmed + 1] = t
    end
    expired = expired + 1
  else
    move_scheduled(id, r, held, {}, run_at, now, channel)
  end
end
group_release(admitted, now, channel)
-- The trimmed ids as one nested list, not unpacked: a step acts on a whole listpack-encoded hash
-- (HSCAN's COUNT is a hint), up to BURY_TRIM ids each, past what unpack may spread.
return { scan[1], #picked, expired, trimmed }
