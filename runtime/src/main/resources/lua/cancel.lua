-- cancel.lua: deletes a scheduled job (record and shard entry); marks a job in flight cancelled.
-- KEYS: see lib.lua; the day shard of the job's runAt (first call without it: DQNEEDDAY names it)
-- ARGV[A] = id, ARGV[A+1] = wake channel (a released job of a group gives its slot to the group's
--           next held job: see lib.lua's group_release; that needs today's shard too)
-- A job its group holds back is deleted from gheld (it is in no shard).
-- With a result retention, KEYS succeeded and results follow (lib.lua's K_RESULTS): a scheduled job
-- deleted takes the kept success of an earlier job of its id with it (see cancel_scheduled).
-- A job in flight keeps running until its holder hears of it: its lease token gets the cancel mark
-- (lib.lua's CANCEL_MARK) and the partition's wake-up channel carries "c <token> <id>" to the
-- holder (takers ignore a message that is not a time; a lost one is made up for by the holder's
-- heartbeat, which reads the marks of its leases). The holder's outcome, or the reclaim of a lease
-- its holder left to expire, then removes the job (lib.lua's drop_cancelled).
-- Returns 1 deleted, 0 unknown, 2 in flight and now marked, 3 in flight and marked already, -1 in
-- flight without a lease (not cancelled), -2 dead (not cancelled).
local id = ARGV[A]
local rec = rcall('HGET', K_JOBS, id)
if not rec then return 0 end
if rcall('ZSCORE', K_INFLIGHT, id) then
  local token = rcall('HGET', K_LEASES, id)
  if not token then return -1 end
  if marked(token) then return 3 end
  rcall('HSET', K_LEASES, id, token .. CANCEL_MARK)
  wake(ARGV[A + 1], 'c ' .. token .. ' ' .. id)
  return 2
end
if rcall('ZSCORE', K_DEAD, id) then return -2 end
local r = decode(rec)
local held = is_held(id, r)
local admitted = held and {} or admitted_of({ id })
local now = #admitted > 0 and now_ms() or 0
-- A held lane job: the plain shard of its runAt, for its plain twin (see lib.lua's twins_of).
local need = {}
if not held then
  need = codes_of(r)
  if #admitted > 0 then need[#need + 1] = day_of(now) end
elseif r.priority ~= 3 then
  need[1] = day_of(r.run_at)
end
local err = require_days(need)
if err then return err end
cancel_scheduled(id, r, held, admitted, now, ARGV[A + 1])
return 1
