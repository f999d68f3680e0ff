-- enqueue.lua: idempotent insert of a batch of jobs into their day shards, in one atomic step.
-- KEYS: see lib.lua (jobs, days, next, inflight, leases, dead, day shards of the jobs' runAt days)
-- ARGV[A]   = wake channel (published to when a job becomes the earliest of the partition)
-- ARGV[A+1] = trace: W3C context of the enqueue (see lib.lua), '' when it ran in no trace
-- ARGV[A+2] = dedup window ms of the topic, 0 = none: an id that succeeded within it is not
--             scheduled again (reply: state c, the time it succeeded in place of runAt)
-- ARGV[A+3] = recurring schedule name when this call fires one of its ticks, else ''
-- ARGV[A+4] = that tick, epoch ms: when the schedule already fired (or skipped) a tick at or
--             after it into this partition, nothing is written and the reply is {now, -1};
--             otherwise the tick is recorded with the jobs (n = 0 records a skipped tick). Followed
--             by 'o' when the schedule's overlap is skip (all its ticks come to this partition): while
--             the job of the last tick it enqueued here (field '<name>:job' of ticks) is scheduled or
--             running, the tick is recorded as skipped, no job written, and the reply is {now, -2}
--             (a dead job does not block; ':' is in no schedule name, so the field is no name's)
-- ARGV[A+5] = n, the number of jobs; then 12 values per job:
--             id, mode ('d' = runAt is Redis now + value, 'a' = runAt is value), value ms,
--             maxAttempts (0 = topic default), payload json, ifExists: what an id that exists does
--             ('k' keep: answers the job as it is; 'r' replace: a scheduled job takes the new
--             payload, runAt, maxAttempts and retry; 'e' extend: as 'r', but its runAt never moves
--             earlier). With 'r' or 'e' an id in flight is answered as it is (Java: a conflict);
--             one that is dead, or within the dedup window, is enqueued anew; retry: the job's own
--             backoff as the record keeps it ("<initial ms>,<max ms>", see lib.lua), '' = the topic's;
--             group ('' = none; Java sent the job to its group's partition). A replaced job that its
--             group held back stays held when still due in the same group, else leaves gheld; a
--             released one gives its slot to the group's next held
--             job (lib.lua's group_release; that needs today's shard too); and the token of the
--             transactional outbox's row the job comes from ('' = none): a token relayed in the
--             last 24 h (KEYS[24], see lib.lua's remember_relayed) writes nothing and is answered
--             as already there (state c when its job is gone: it ran), else it is remembered;
--             timeoutMs ('' = the topic's attempt timeout) and expiresAt (epoch ms, '' = none): the
--             job's own limits (lib.lua's LIMIT_MARK); priority (1..5, '' = not given: 3 for a
--             new job, the stored one for a replace or extend; lib.lua's lanes and PRIORITY_PREFIX). A replaced or extended job whose runAt is
--             then after its expiresAt goes to dead instead ("expired: ...", reply state d)
-- ARGV[J + 11n] (after the jobs) = a burial's callback flag and dead-set bounds (see lib.lua's
--             bury), for those; absent = '0'
-- Returns {now, then 4 values per job: created (1), replaced (2) or already there (0), runAt ms
--          (for state c: when it succeeded), attempts, state letter (s, i, d, c = succeeded, or x = in
--          flight and cancelling: see cancel.lua)},
--          then, only when those burials trimmed the dead set (see lib.lua's bury), k and the k ids
--          trimmed, and last
--          'relist' when the topic was forgotten since the partition emptied (see forget.lua):
--          Java lists the topic again before it answers.
-- With the claims key after the day shards (several partitions, see lib.lua's K_CLAIMS):
--          {'claimed', now, then 2 values per claimed id: its index in the call (1-based), its claim},
--          nothing written.
-- Errors: DQNEEDDAY (see lib.lua) when a runAt falls on a day whose shard was not passed (for a
--         replaced job, also the day of the runAt it leaves).
local channel = ARGV[A]
local trace = ARGV[A + 1]
local window = tonumber(ARGV[A + 2])
local recurring = ARGV[A + 3]
local tick, no_overlap = string.match(ARGV[A + 4], '^(-?%d+)(o?)$')
local n = tonumber(ARGV[A + 5])
local now = now_ms()
local J = A + 6 -- first job's values
local STRIDE = 12
local burial = ARGV[J + n * STRIDE] or '0'

-- A recurring tick runs once: every replica fires it, the first one records it in this
-- partition (the tick's job lives here, so the record and the job are written together).
if recurring ~= '' then
  local last = tonumber(rcall('HGET', K_TICKS, recurring))
  if last and last >= tonumber(tick) then return { now, -1 } end
  -- Overlap skip: the previous tick's job, when it still lives here and is not dead, holds this
  -- tick back; checked and recorded in this one step, so no replica can slip a tick in between.
  if no_overlap == 'o' and n > 0 then
    local prev = rcall('HGET', K_TICKS, recurring .. ':job')
    local prev_id = prev and recurring .. ':' .. prev
    if prev_id and rcall('HEXISTS', K_JOBS, prev_id) == 1 and not rcall('ZSCORE', K_DEAD, prev_id) then
      rcall('HSET', K_TICKS, recurring, tick)
      return { now, -2 }
    end
  end
end

local ids, modes = {}, {}
for i = 1, n do
  ids[i] = ARGV[J + (i - 1) * STRIDE]
  modes[i] = ARGV[J + (i - 1) * STRIDE + 5]
end
-- One HMGET answers "does it exist" for the whole batch (idempotency by topic + id).
local existing = {}
for i = 1, n, CHUNK do
  local part = rcall('HMGET', K_JOBS, unpack(ids, i, math.min(i + CHUNK - 1, n)))
  for j = 1, #part do existing[i + j - 1] = part[j] end
end
-- Ids whose job a group put in another partition (claimed here, their home: see claim.lua) are
-- not written, nor is any other job of the call: the reply names them, Java checks those jobs
-- and calls again, or refuses the enqueue.
if K_CLAIMS then
  local claimed = { 'claimed', now }
  for i = 1, n, CHUNK do
    local part = rcall('HMGET', K_CLAIMS, unpack(ids, i, math.min(i + CHUNK - 1, n)))
    for j = 1, #part do
      if part[j] then
        claimed[#claimed + 1] = i + j - 1
        claimed[#claimed + 1] = part[j]
      end
    end
  end
  if #claimed > 2 then return claimed end
end
-- With a dedup window, one ZMSCORE per chunk finds the ids that succeeded lately: within the
-- window they count as existing (succeeded) unless replaced; past it they are free, and their
-- entry goes now rather than wait for an ack's trim (a scheduled id is never in done). A replace
-- or extend enqueues a remembered id anew, so its entry goes too.
local succeeded, forget = {}, {}
if window > 0 then
  for i = 1, n, CHUNK do
    local part = rcall('ZMSCORE', K_DONE, unpack(ids, i, math.min(i + CHUNK - 1, n)))
    for j = 1, #part do
      local k = i + j - 1
      if not existing[k] and part[j] then
        if modes[k] == 'k' and remembered(part[j], window, now) then
          succeeded[k] = tonumber(part[j])
        else
          forget[#forget + 1] = ids[k]
        end
      end
    end
  end
end

-- First pass plays the batch in order on what each id holds (in Redis, or earlier in this same
-- batch) and decides every record to write; nothing is written before the shards are checked.
-- job_of[id] = { r = record, state, write = record to store, old = stored runAt to leave (a
-- replaced scheduled job), dead = revived from the dead set }
local job_of, order, out, tokens = {}, {}, { now }, {}
for i = 1, n do
  local base = J + (i - 1) * STRIDE
  local id, mode = ids[i], modes[i]
  local token = ARGV[base + 8]
  local again = token ~= '' and rcall('ZSCORE', K_RELAYED, token)
  if token ~= '' and not again then tokens[#tokens + 1] = token end
  local e = job_of[id]
  if not e and existing[i] then
    e = { r = decode(existing[i]), state = state_of(id) }
    if e.state == 's' and e.r.group ~= '' then
      if is_held(id, e.r) then
        e.held, e.held_group = held_member(e.r.group, e.r.run_at, id, e.r.priority), e.r.group
      else
        e.admit = rcall('HGET', K_GADMIT, id) or nil
      end
    end
    job_of[id] = e
  end
  if again then
    -- An outbox row relayed before: what became of its job since is not this call's to change.
    out[#out + 1] = 0
    out[#out + 1] = e and e.r.run_at or now
    out[#out + 1] = e and e.r.attempts or 0
    out[#out + 1] = e and e.state or 'c'
  elseif e and (mode == 'k' or e.state == 'i') then
    out[#out + 1] = 0
    out[#out + 1] = e.r.run_at
    out[#out + 1] = e.r.attempts
    out[#out + 1] = e.state == 'i' and cancelling(id) and 'x' or e.state
  elseif not e and succeeded[i] then
    out[#out + 1] = 0
    out[#out + 1] = succeeded[i]
    out[#out + 1] = 0
    out[#out + 1] = 'c'
  else
    local v = tonumber(ARGV[base + 2])
    local r = { run_at = ARGV[base + 1] == 'd' and now + v or v, trace = trace, attempts = 0,
      max = tonumber(ARGV[base + 3]), err = '', payload = ARGV[base + 4], retry = ARGV[base + 6],
      group = ARGV[base + 7], timeout = ARGV[base + 9] or '', expires = tonumber(ARGV[base + 10] or ''),
      priority = tonumber(ARGV[base + 11] or '') }
    local code = 1
    if not e then
      e = {}
      job_of[id] = e
    elseif e.state == 'd' then
      -- A dead id starts over as a new job; its dead-job callback, if any, keeps its own copy.
      e.dead = true
    else
      -- Replaced: the same job, so its failed attempts, lost ones and last error stay with it;
      -- the trace of the enqueue that replaced it, when there was one.
      if mode == 'e' and e.r.run_at > r.run_at then r.run_at = e.r.run_at end
      r.attempts, r.err, r.lost = e.r.attempts, e.r.err, e.r.lost
      if trace == '' then r.trace = e.r.trace end
      -- A replace or extend that gives no priority keeps the stored one.
      if not r.priority then r.priority = e.r.priority end
      if not e.write then e.old, e.old_priority = e.r.run_at, e.r.priority end
      code = 2
    end
    if not r.priority then r.priority = 3 end
    if not e.write then order[#order + 1] = id end
    -- A replace or extend that leaves the job due after its expiresAt buries it (written below).
    e.expire = code == 2 and expired_by(r, r.run_at) or nil
    e.r, e.state, e.write = r, e.expire and 'd' or 's', true
    out[#out + 1] = code
    out[#out + 1] = r.run_at
    out[#out + 1] = r.attempts
    out[#out + 1] = e.state
  end
end
local days, admitted = {}, {}
for _, id in ipairs(order) do
  local e = job_of[id]
  days[#days + 1] = code_of(e.r.priority, day_of(e.r.run_at))
  if e.old and not e.held then
    for _, c in ipairs(codes_of({ run_at = e.old, priority = e.old_priority })) do days[#days + 1] = c end
  elseif e.old and e.old_priority ~= 3 then
    -- a held lane job: the plain shard of its runAt, for its plain twin (lib.lua's twins_of)
    days[#days + 1] = day_of(e.old)
  end
  -- A released job (admitted, waiting in its shard) replaced in its group, still due, keeps its
  -- admission: it starts next, as it would have.
  if e.admit and (e.expire or not (e.r.group == e.admit and e.r.run_at <= now)) then admitted[#admitted + 1] = { id, e.admit } end
end
if #admitted > 0 then days[#days + 1] = day_of(now) end
local err = require_days(days)
if err then return err end

local fields, by_shard, earliest, left, revived, trimmed = {}, {}, nil, {}, {}, {}
local head = tonumber(rcall('GET', K_NEXT))
local head_left, lane_earliest, lane_left = false, nil, false
-- Nothing scheduled before this call (priority 3 or lanes): the topic may have been forgotten.
local empty_before = not head and not rcall('GET', K_LNEXT)
for _, id in ipairs(order) do
  local e = job_of[id]
  local r = e.r
  if not e.expire then
    fields[#fields + 1] = id
    fields[#fields + 1] = encode(r)
  end
  -- A held job replaced in its group, still due, keeps its place among the group's held jobs (by
  -- its runAt): out of gheld into a shard, a later job of its group could start before it.
  local stays_held = e.held and r.group == e.held_group and r.run_at <= now and not e.expire
  if e.held then
    rcall('ZREM', K_GHELD, e.held)
    -- Its plain twin too (lib.lua's twins_of); the day index is checked below, with the others.
    if e.old and e.old_priority ~= 3 and drop_plain_twin(id, e.old, true) then left[day_of(e.old)] = true end
    if stays_held then rcall('ZADD', K_GHELD, 0, held_member(r.group, r.run_at, id, r.priority)) end
  elseif e.old then
    -- Out of its lane's shard, and the plain one (see lib.lua's codes_of).
    for _, c in ipairs(codes_of({ run_at = e.old, priority = e.old_priority })) do
      rcall('ZREM', shard_of_day[c], id)
      left[c] = true
    end
    if e.old_priority ~= 3 then
      lane_left = true
    elseif head and e.old <= head then
      head_left = true
    end
  end
  -- A dead id revived, then replaced or extended past its expiresAt in the same call, stays dead
  -- (buried again below): out of the dead set it would be in no index at all.
  if e.dead and not e.expire then revived[#revived + 1] = id end
  if e.expire then
    for _, t in ipairs(bury_expired(id, r, now, burial, 'replaced or extended past expiresAt')) do
      trimmed[#trimmed + 1] = t
    end
  elseif not stays_held then
    local d = code_of(r.priority, day_of(r.run_at))
    local shard = shard_of_day[d]
    local list = by_shard[shard]
    if not list then
      list = {}
      by_shard[shard] = list
      rcall('ZADD', d < LANE and K_DAYS or K_LDAYS, d, d)
      left[d] = nil
    end
    list[#list + 1] = r.run_at
    list[#list + 1] = id
    if d >= LANE then
      if not lane_earliest or r.run_at < lane_earliest then lane_earliest = r.run_at end
    elseif not earliest or r.run_at < earliest then
      earliest = r.run_at
    end
  end
end

if recurring ~= '' then
  rcall('HSET', K_TICKS, recurring, tick)
  if no_overlap == 'o' and n > 0 then rcall('HSET', K_TICKS, recurring .. ':job', tick) end
end
if #forget > 0 then variadic('ZREM', K_DONE, forget) end
if #revived > 0 then variadic('ZREM', K_DEAD, revived) end
if #trimmed > 0 then
  out[#out + 1] = #trimmed
  for _, t in ipairs(trimmed) do out[#out + 1] = t end
end
if #order > 0 then
  variadic('HSET', K_JOBS, fields)
  for shard, list in pairs(by_shard) do variadic('ZADD', shard, list) end
  -- A replaced job may have emptied the shard of its old runAt: the day index lists only
  -- non-empty shards.
  for d in pairs(left) do
    if rcall('ZCARD', shard_of_day[d]) == 0 then rcall('ZREM', d < LANE and K_DAYS or K_LDAYS, d) end
  end
  -- The lanes' bound: lowered by a job into a lane, set exactly when a lane job moved.
  if lane_left then
    -- Set exactly; lowered too when a job came into a lane (a replace to an earlier runAt): wake.
    local before = tonumber(rcall('GET', K_LNEXT))
    local after = reset_lnext()
    if after >= 0 and (not before or after < before) then wake(channel, string.format('%d', after)) end
  elseif lane_earliest then
    local lhead = tonumber(rcall('GET', K_LNEXT))
    if not lhead or lane_earliest < lhead then
      rcall('SET', K_LNEXT, lane_earliest)
      if not earliest or lane_earliest < earliest then wake(channel, lane_earliest) end
    end
  end
  if empty_before and forgotten_since() then out[#out + 1] = 'relist' end
  if not earliest then
    -- Only held jobs were written: no shard changed.
  elseif not head or earliest < head then
    rcall('SET', K_NEXT, earliest)
    wake(channel, earliest)
  elseif head_left then
    -- The earliest job moved later (extend, replace): "next" would still be a lower bound, but
    -- takers would wake for nothing at the old time, so set it exactly.
    reset_next()
  end
end
group_release(admitted, now, channel)
remember_relayed(tokens, now)
return out
