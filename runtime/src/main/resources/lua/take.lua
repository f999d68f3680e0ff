-- take.lua: leases up to N due jobs of a partition to the caller, oldest day shard first, and
-- acks the caller's jobs that completed since its last take (one script call instead of two).
-- KEYS: see lib.lua; the day shards passed must include every non-empty day up to today
--       (Java passes yesterday, today, tomorrow and the older days it learnt from DQNEEDDAY).
-- ARGV[A]   = N, the most jobs to take (the caller's free worker slots)
-- ARGV[A+1] = lease ms (lease deadline = Redis now + lease)
-- ARGV[A+2] = lease token prefix, unique per call; job i of the reply gets token prefix..i
-- ARGV[A+3] = deadline: Redis time (ms) after which this call leases nothing, 0 = none. The
--             caller stops waiting for the reply at about twice that; a call Redis runs later
--             (stuck behind a CLIENT PAUSE, a slow script, a full pool) must not lease jobs to a
--             token nobody holds: they would sit in flight until their lease expired, and lose
--             an attempt.
-- ARGV[A+4] = dedup window ms of the topic, 0 = none (the carried acks remember their ids)
-- ARGV[A+5] = the topic's rate limit in the caller's configuration, jobs/s, 0 = none; one set
--             by an operator (KEYS ratelimit) wins
-- ARGV[A+6] = P, the topic's partition count: each partition runs a P-th of the topic's limit
-- ARGV[A+7] = the topic's concurrency cap in the caller's configuration, jobs in flight at once over
--             all its partitions, 0 = none; one set by an operator (KEYS maxinflight) wins
-- ARGV[A+8] = i, this partition's index (0 .. P-1): its share of a cap N is floor(N / P), plus one
--             when i < N mod P (the shares sum to N, and every replica computes the same)
-- ARGV[A+9] = wake channel (a take that freed slots of a capped partition wakes the other takers)
-- ARGV[A+10] = M, the topic's group-max-in-flight in the caller's configuration, 0 = none: a due job
--             of a group with M jobs admitted, or holding jobs back already, is held back (see
--             lib.lua's groups, gheld, gadmit)
-- ARGV[A+11] = a burial's callback flag and dead-set bounds (see lib.lua's bury), for the due jobs
--             whose expiresAt has passed: those are buried, not taken (lastError "expired: <last
--             error, or not started by expiresAt>"); they use no slot of N, of the cap or of the rate
-- ARGV[A+12] = the topic's group-rate-limit in the caller's configuration, jobs/s per group, 0 = none;
--             one set by an operator (KEYS grouprate) wins: a due job its group's limit does not
--             let start now is put off to its group's next turn (see "The group rate limit" below)
-- ARGV[A+13] = m, acks carried by this call; then m pairs: id, lease token (m < 0: the topic's
--             result retention, then -m triples with a result: see lib.lua's ack_leases)
-- Returns {now, next, wait, held, s, stale ack id 1..s, x, expired id 1..x, t, id 1..t trimmed
-- from the dead set by their burials, id1, record1, id2, record2, ...}: next =
-- the earliest runAt still scheduled after this take (-1 when none); wait = -1 while the topic is
-- paused (nothing was taken: sleep until a wake-up), -2 when the concurrency cap held the take back
-- while jobs are still due (sleep until a wake-up: the step that frees a slot publishes one), else
-- the Redis time (ms) before which the rate limit or a hold lets no take have a job, 0 when neither
-- holds anything back; held = the end of the topic's hold (nothing was taken: no wake-up before it
-- means anything), 0 = none.
-- Errors: DQNEEDDAY (lib.lua), raised before anything is written (acks included).
local limit = tonumber(ARGV[A])
local lease_ms = tonumber(ARGV[A + 1])
local prefix = ARGV[A + 2]
local take_deadline = tonumber(ARGV[A + 3])
local now = now_ms()
if take_deadline > 0 and now > take_deadline then limit = 0 end
local today = day_of(now)
local group_limit = tonumber(ARGV[A + 10])

-- Flow control, from Redis state so that every replica obeys it at once: a paused partition
-- leases nothing (the carried acks still count). A rate limit is a GCRA over Redis time, shared
-- by every replica: a job every "interval" ms on average. A take may have BATCH_MS worth of jobs
-- at once (at least one), so that a fast limit is still taken in batches; a held-back taker is
-- told to come back SLACK_MS before its batch is due, so that its wake-up latency is absorbed
-- rather than lost (a late take would restart the pace at its own time: ~2 % below the limit).
-- So no second ever sees more than the limit plus BATCH_MS + SLACK_MS worth of jobs.
-- A hold (the topic's HTTP target answered 429/503 with Retry-After, see flow.lua) leases nothing
-- until it ends, and tells the taker when that is: it sleeps until then, no take in between.
local BATCH_MS, SLACK_MS = 40, 10
-- The "capped" mark expires: a step of a release that predates the cap frees slots without
-- answering it, and the safety-net poll, which leaves a marked partition's takers asleep, then
-- wakes them after this long at the latest.
local CAPPED_MS = 30000
local flow = rcall('MGET', K_PAUSED, K_RATE, K_RATE_TAT, K_HELD, K_MAX_INFLIGHT, K_CAPPED, K_GROUP_RATE)
local wait, rate_tat, interval, allowed = 0, nil, nil, nil
local held = tonumber(flow[4]) or 0
if held <= now then held = 0 end
if flow[1] then
  limit, wait = 0, -1
elseif held > 0 then
  limit, wait = 0, held
else
  local rate = tonumber(flow[2]) or tonumber(ARGV[A + 5])
  if rate > 0 then
    interval = 1000 * tonumber(ARGV[A + 6]) / rate
    local batch = math.max(1, math.floor(BATCH_MS / interval))
    local tolerance = (batch - 1) * interval + SLACK_MS
    -- Never further ahead than one batch: a state written under a slower limit (a configuration
    -- changed by a rolling restart) or before Redis' clock stepped back must not hold the
    -- partition for that long.
    rate_tat = math.min(math.max(tonumber(flow[3]) or 0, now), now + tolerance + interval)
    -- (+1e-6: (batch - 1) * interval / interval must not round down to batch - 2)
    allowed = math.max(0, math.floor((now + tolerance - rate_tat) / interval + 1e-6) + 1)
    if allowed < limit then limit = allowed end
  end
end

-- "next" is a lower bound of every runAt in the partition (every script that schedules a job
-- lowers it; this one sets it exactly).
local head = tonumber(rcall('GET', K_NEXT))
local due = head and head <= now and limit > 0
-- Fast path, the usual case under load: when the head falls on today no older shard holds a
-- job, and today's first job is the earliest of all.
local fast = due and day_of(head) == today
local wanted = {}
if fast then
  if not shard_of_day[today] then return redis.error_reply('DQNEEDDAY ' .. string.format('%d', today)) end
elseif due then
  -- At most 32 shards per call: a backlog spread over more past days is taken over several calls.
  local days = rcall('ZRANGEBYSCORE', K_DAYS, '-inf', today, 'LIMIT', 0, 32)
  for i = 1, #days do wanted[i] = tonumber(days[i]) end
  local err = require_days(wanted)
  if err then return err end
end

-- Under a rate limit, the jobs taken advance the partition's schedule; the caller is told when
-- the limit lets a whole batch go again if it held this take back, else nothing (wait 0).
local function pace(taken)
  if not interval then return wait end
  if taken > 0 then
    rate_tat = rate_tat + taken * interval
    rcall('SET', K_RATE_TAT, string.format('%.3f', rate_tat), 'PX', math.ceil(rate_tat - now) + 1000)
  end
  if taken < allowed then return 0 end
  return math.ceil(rate_tat - SLACK_MS)
end

local stale, acked, released = ack_leases(A + 14, tonumber(ARGV[A + 13]), tonumber(ARGV[A + 4]), now, ARGV[A + 9])
if not stale then return acked end
-- The stored limit, which releases obey, follows the callers' configuration. Raised (or set again
-- while jobs are still held), the groups that hold jobs start them up to the new limit now: their
-- jobs may all be held, none in a shard for a take to meet.
if group_limit > 0 then
  local stored = tonumber(rcall('HGET', K_GROUPS, ''))
  if stored ~= group_limit then
    rcall('HSET', K_GROUPS, '', group_limit)
    if not stored or group_limit > stored then
      local order, ending = {}, {}
      for _, m in ipairs(rcall('ZRANGE', K_GHELD, 0, 999)) do
        local g = held_split(m)
        if not ending[g] then
          ending[g] = 0
          order[#order + 1] = g
        end
      end
      if #order > 0 then released = released + group_fill(order, ending, now, ARGV[A + 9]) end
    end
  end
end
-- A topic whose group-max-in-flight was turned off (0 in this call) while its groups held jobs
-- back: nothing holds them any more. Back into today's shard, due, before this take looks: at
-- their own runAt when it falls on today, else from today's first millisecond on, their runAt
-- rewritten as a release does, in their order (a later job of the group due on an older day would
-- go first). The stored limit goes once none is left, so that a job still admitted frees its slot
-- without a limit. One EXISTS per due take of such a topic. Due counts what the carried acks
-- released too: `due` was decided before they ran, and a group whose jobs were all held had
-- nothing in a shard until its ack released the next one (the others would stay held for good).
if group_limit <= 0 and (due or (released > 0 and limit > 0)) and rcall('EXISTS', K_GHELD) == 1 then
  local members = rcall('ZRANGE', K_GHELD, 0, 999)
  rcall('ZREM', K_GHELD, unpack(members))
  local ids, runs = {}, {}
  for i, m in ipairs(members) do
    local _, run_at, id = held_split(m)
    ids[i], runs[i] = id, run_at
  end
  local recs = rcall('HMGET', K_JOBS, unpack(ids))
  local records, due_at, early = {}, {}, day_start(today)
  for i, id in ipairs(ids) do
    if recs[i] then
      local at = runs[i]
      if day_of(at) ~= today then
        at, early = math.min(now, early), early + 1
        records[#records + 1] = id
        records[#records + 1] = with_run_at(recs[i], at)
      end
      due_at[#due_at + 1] = at
      due_at[#due_at + 1] = id
    end
  end
  if #due_at > 0 then
    if #records > 0 then variadic('HSET', K_JOBS, records) end
    variadic('ZADD', shard_of_day[today], due_at)
    rcall('ZADD', K_DAYS, today, today)
    -- Members come in group order: the lowest runAt is anywhere among them.
    local lowest = due_at[1]
    for k = 3, #due_at, 2 do lowest = math.min(lowest, due_at[k]) end
    if not head or lowest < head then
      head = lowest
      rcall('SET', K_NEXT, lowest)
    end
    released = released + #due_at / 2
  end
  if rcall('EXISTS', K_GHELD) == 0 then rcall('HDEL', K_GROUPS, '') end
end
-- A carried ack that freed a group's slot put its next job into today's shard, due now: this take
-- may have it (today's shard is always passed).
if released > 0 and limit > 0 then
  head = tonumber(rcall('GET', K_NEXT))
  if not due then
    due = true
    fast = day_of(head) == today
  elseif not fast then
    local listed = false
    for _, d in ipairs(wanted) do listed = listed or d == today end
    if not listed then wanted[#wanted + 1] = today end
  end
end

-- The concurrency cap: the partition's share of it, against its in-flight set after the carried
-- acks (leases that expired and are not yet reclaimed still count: their replica may be running
-- them). A take never leases past the share; one the share held back while jobs stay due leaves
-- the "capped" mark, which the next step that frees a slot (any script, on any replica) answers
-- with a wake-up: the held-back takers sleep until then instead of polling. A take that ends with
-- room to spare answers a mark left by another itself (it freed slots, or the cap was raised).
local cap = tonumber(flow[5]) or tonumber(ARGV[A + 7])
local room = nil
if cap > 0 then
  local parts, index = tonumber(ARGV[A + 6]), tonumber(ARGV[A + 8])
  local share = floor(cap / parts) + (index < cap % parts and 1 or 0)
  room = math.max(0, share - rcall('ZCARD', K_INFLIGHT))
end
local capped_back = false
local function settle_cap(taken, next_due)
  if not room then return end
  if room - taken <= 0 and next_due >= 0 and next_due <= now then
    capped_back = true
    rcall('SET', K_CAPPED, '1', 'PX', CAPPED_MS)
  elseif flow[6] then
    rcall('DEL', K_CAPPED)
    if next_due >= 0 then wake(ARGV[A + 9], next_due) end
  end
end

local out = { now, head or -1, 0, held, #stale }
for _, id in ipairs(stale) do out[#out + 1] = id end
if due and room and room < limit then
  limit = room
  due = limit > 0
end
if not due then
  out[#out + 1] = 0
  out[#out + 1] = 0
  out[3] = pace(0)
  if room and (head or -1) >= 0 then settle_cap(0, head) end
  if capped_back then out[3] = -2 end
  return out
end

-- Groups: with a limit M, a due job of a group that has M jobs admitted, or that holds jobs back
-- already (those come first: runAt order), is held back, out of its shard into gheld in the same
-- step; the others are taken and admitted (a released job, admitted already, is taken). A group
-- below its limit that holds jobs starts those first (take_held). A call
-- looks at no more than SCAN jobs, held ones included, so that a big group's backlog costs
-- bounded time per call: the other groups' jobs behind it come within a few calls (every such
-- call leaves "next" due, so the taker comes straight back).
local SCAN = 1000
local looked, groups, recs_of, admit = 0, {}, {}, {}
-- A due job whose expiresAt has passed is buried instead of taken (one find of the mark per job
-- met: a job without limits costs nothing more); an admitted one gives its slot back. The mark
-- lives in the record's head (see lib.lua's encode), and a JSON payload never holds the raw byte
-- (control characters are escaped in JSON), so a plain find over the whole record never misreads.
-- That find is a memchr: measured in one EVAL loop (loaded 2-core machine, noisy), 0.2 us on a
-- 1 KB record against 0.6-1 us for an anchored pattern that stops at the head's newline; they
-- meet near 30 KB (1.5 us), and at 100 KB the plain find takes 4 us. So a record above 32 KB is
-- looked at up to its head only (the pattern: no payload byte read, nothing copied), smaller
-- ones with the plain find. A record of a release before limits has no mark: never expired.
local LIMIT_IN_HEAD, HEAD_ONLY_ABOVE = '^[^\n]*' .. LIMIT_MARK, 32768
local expired, trimmed, unadmit = {}, {}, {}
local function expire(id, rec)
  if not rec then return false end
  if #rec > HEAD_ONLY_ABOVE then
    if not string.find(rec, LIMIT_IN_HEAD) then return false end
  elseif not string.find(rec, LIMIT_MARK, 1, true) then
    return false
  end
  local r = decode(rec)
  if not expired_by(r, now) then return false end
  for _, g in ipairs(bury_expired(id, r, now, ARGV[A + 11], 'not started by expiresAt')) do trimmed[#trimmed + 1] = g end
  expired[#expired + 1] = id
  return true
end
-- The group rate limit (delayq.topics.<t>.group-rate-limit, jobs/s per group; one set by an
-- operator, KEYS grouprate, wins): a GCRA per group over Redis time, as the topic's limit (same
-- batch and slack), its state in grouptat. A group lives in one partition, so the limit is the
-- group's over all replicas. A due job that its group's limit does not let start now is put off,
-- not held: its runAt becomes its group's next turn (record and shard entry move in this step) and
-- that turn is kept for it in grouptat ("\0<id>"). So it waits as any scheduled job does: "next"
-- wakes a taker at its turn (no poll, nothing when idle), and the other groups' jobs behind it are
-- taken as usual, since it is out of their way. Each job is put off once, in its group's order; met
-- at its turn it starts whatever the group's pace says then (its turn was counted when given). A
-- turn past the days passed to this call (a group's backlog more than a day long) puts the job at
-- the end of the last day passed, its turn kept: met there, it is put off again, towards its turn.
local group_rate = tonumber(flow[7]) or tonumber(ARGV[A + 12])
local g_interval, g_tolerance = nil, nil
if group_rate > 0 then
  g_interval = 1000 / group_rate
  g_tolerance = (math.max(1, floor(BATCH_MS / g_interval)) - 1) * g_interval + SLACK_MS
end
-- Entries of grouptat live this long past their time: a job met later than that after its turn (its
-- topic was paused meanwhile, or no replica served it) passes its group's limit again. Two days, not
-- less: a put-off job met after its entry went would be put off again behind its group's pace, and
-- while the topic runs later than the grace (workers saturated), every job of the group would, so
-- the group would start nothing (found in review with a minute's grace and a topic two minutes late).
local GRACE_MS = 2 * DAY_MS
-- group -> its theoretical arrival time as this call moved it (nil: not read yet).
local gtat, g_touched = {}, false
-- nil when a due job (id) of group g may start now (the group's pace moves on), else the time it
-- is put off to: its turn, given now or by an earlier call.
local function group_turn(g, id)
  g_touched = true
  local tat = gtat[g]
  if tat == nil then tat = tonumber(rcall('ZSCORE', K_GROUP_TAT, g)) or 0 end
  -- Only a group whose pace is ahead of now can have given turns that are still kept.
  if tat > now then
    local member = '\0' .. id
    local turn = tonumber(rcall('ZSCORE', K_GROUP_TAT, member))
    if turn then
      gtat[g] = tat
      if turn > now then return turn end
      rcall('ZREM', K_GROUP_TAT, member)
      return nil
    end
  end
  tat = math.max(tat, now)
  gtat[g] = tat + g_interval
  if tat <= now + g_tolerance then return nil end
  local turn = math.ceil(tat - g_tolerance)
  rcall('ZADD', K_GROUP_TAT, turn, '\0' .. id)
  return turn
end
-- The last millisecond of the latest day passed to this call. Only passed days: a host clock a day
-- off Redis' may leave today's shard out, and a put-off there would ZADD to no key after its ZREM
-- (the job met was taken out of a passed shard, so there is always one).
local function last_passed_ms()
  local last = nil
  for d in pairs(shard_of_day) do
    if not last or d > last then last = d end
  end
  return day_start(last) + DAY_MS - 1
end
-- Puts a due job (its record rec) off to its turn, as the scheduled job it stays (its admission,
-- when it has one, stays with it): written by flush_offs, once the job is out of its shard or
-- gheld (a round of pull removes the jobs it met after looking at them all).
local offs = {}
local function put_off(id, rec, turn)
  local at = turn
  if not shard_of_day[day_of(at)] then at = math.min(turn, last_passed_ms()) end
  offs[#offs + 1] = { id, rec, at }
end
local function flush_offs()
  for _, o in ipairs(offs) do
    local id, at = o[1], o[3]
    local day = day_of(at)
    rcall('HSET', K_JOBS, id, with_run_at(o[2], at))
    rcall('ZADD', shard_of_day[day], at, id)
    rcall('ZADD', K_DAYS, day, day)
  end
  offs = {}
end
-- put_off when the group rate limit does not let a due job (id, its record rec) of group g
-- ('' or false = none) start now; true when it was put off.
local function off_by_rate(g, id, rec)
  if not g_interval or not g or g == '' or not rec then return false end
  local turn = group_turn(g, id)
  if not turn then return false end
  put_off(id, rec, turn)
  return true
end

-- A group below its limit that holds jobs back (its limit was raised, or a release found a member
-- without a record) starts those due no later than upto (the job the take met) first, taken
-- straight out of gheld in runAt order, up to room. Returns how many were admitted, what is known
-- of the group's held jobs left (the runAt of the first, false when none is left), and how many of
-- the admitted the group rate limit put off (admitted, not taken).
local function take_held(g, room, upto, taken)
  local members = held_of(g, room + 1)
  local ids, runs = {}, {}
  for k, m in ipairs(members) do
    local _
    _, runs[k], ids[k] = held_split(m)
  end
  local n = 0
  while n < #members and n < room and runs[n + 1] <= upto do n = n + 1 end
  local first_left = runs[n + 1] or false
  if n == 0 then return 0, first_left, 0 end
  rcall('ZREM', K_GHELD, unpack(members, 1, n))
  local recs = rcall('HMGET', K_JOBS, unpack(ids, 1, n))
  local got, off = 0, 0
  for k = 1, n do
    local id = ids[k]
    if recs[k] and expire(id, recs[k]) then
      -- not admitted: a held job has no slot yet
    elseif recs[k] then
      if off_by_rate(g, id, recs[k]) then
        off = off + 1
      else
        taken[#taken + 1] = id
        recs_of[id] = recs[k]
      end
      admit[#admit + 1] = id
      admit[#admit + 1] = g
      got = got + 1
    end
  end
  -- Its put-offs are written with the round's (flush_offs, after the round's ZREM): they came out
  -- of gheld, not out of the shard that ZREM empties.
  return got, first_left, off
end
-- Moves up to want due jobs of a shard into taken (held ones aside); true when the shard has no
-- due job left. A round reads want jobs, and twice as many as the last when that one held jobs
-- back: a big group's backlog is set aside in a few rounds even by a take with one free slot.
local function pull(shard, want, taken)
  if group_limit <= 0 then
    -- Expired jobs, and those put off by the group rate limit, take no slot: the round reads again
    -- for them, up to SCAN jobs met in all.
    while true do
      local ids = rcall('ZRANGEBYSCORE', shard, '-inf', now, 'LIMIT', 0, want)
      if #ids > 0 then variadic('ZREM', shard, ids) end
      local got = 0
      for i = 1, #ids, CHUNK do
        local part = { unpack(ids, i, math.min(i + CHUNK - 1, #ids)) }
        local recs = rcall('HMGET', K_JOBS, unpack(part))
        for j = 1, #part do
          if not expire(part[j], recs[j]) and not off_by_rate(recs[j] and group_of(recs[j]), part[j], recs[j]) then
            taken[#taken + 1] = part[j]
            recs_of[part[j]] = recs[j] or ''
            got = got + 1
          end
        end
      end
      flush_offs()
      looked = looked + #ids
      if #ids < want then return true end
      want = want - got
      if want <= 0 or looked >= SCAN then return false end
    end
  end
  local ask = want
  while want > 0 and looked < SCAN do
    ask = math.min(math.max(ask, want), SCAN - looked)
    local asked = ask
    local found = rcall('ZRANGEBYSCORE', shard, '-inf', now, 'WITHSCORES', 'LIMIT', 0, asked)
    if #found == 0 then return true end
    local ids, runs = {}, {}
    for i = 1, #found, 2 do
      ids[#ids + 1] = found[i]
      runs[#ids] = found[i + 1]
    end
    local recs = rcall('HMGET', K_JOBS, unpack(ids))
    local admitted = rcall('HMGET', K_GADMIT, unpack(ids))
    -- The admitted counts of the groups first met in this batch, in one read.
    local of, new_groups = {}, {}
    for i = 1, #ids do
      local g = (recs[i] and not admitted[i]) and group_of(recs[i]) or ''
      of[i] = g
      if g ~= '' and not groups[g] and not new_groups[g] then
        new_groups[g] = true
        new_groups[#new_groups + 1] = g
      end
    end
    if #new_groups > 0 then
      local counts = rcall('HMGET', K_GROUPS, unpack(new_groups))
      for i, g in ipairs(new_groups) do groups[g] = { c = tonumber(counts[i]) or 0, added = 0 } end
    end
    -- The jobs of this round are looked at in order until the take has what it wants; the rest
    -- stay in the shard.
    local held, done = {}, 0
    for i, id in ipairs(ids) do
      if want <= 0 then break end
      done = i
      local g = of[i]
      local take_it = true
      if recs[i] and expire(id, recs[i]) then
        if admitted[i] then unadmit[#unadmit + 1] = { id, admitted[i] } end
        take_it = false
      elseif g ~= '' then
        local st = groups[g]
        local run = tonumber(runs[i])
        -- Below its limit, the group's held jobs due no later than this one start first (runAt
        -- order). What it holds matters only there: at its limit, the job is held anyway.
        -- st.held: nil = not looked yet, false = holds none, else the runAt of its first held job.
        if st.c < group_limit and st.held ~= false and (st.held == nil or st.held <= run) then
          local got, off
          got, st.held, off = take_held(g, math.min(group_limit - st.c, want, SCAN), run, taken)
          st.c, st.added, want = st.c + got, st.added + got, want - got + off
        end
        if st.c >= group_limit or want <= 0 then
          held[#held + 1] = 0
          held[#held + 1] = held_member(g, run, id)
          take_it = false
        else
          st.c, st.added = st.c + 1, st.added + 1
          admit[#admit + 1] = id
          admit[#admit + 1] = g
        end
      end
      -- Admitted (now, or released earlier), a job its group's rate limit does not let start is put
      -- off with its admission: the group's cap counts it until it has run.
      if take_it and off_by_rate(g ~= '' and g or admitted[i], id, recs[i]) then take_it = false end
      if take_it then
        taken[#taken + 1] = id
        recs_of[id] = recs[i] or ''
        want = want - 1
      end
    end
    looked = looked + done
    rcall('ZREM', shard, unpack(ids, 1, done))
    flush_offs()
    if #held > 0 then
      rcall('ZADD', K_GHELD, unpack(held))
      ask = ask * 2
    end
    if done < #ids then return false end
    if #ids < asked then return true end
  end
  return false
end

local taken = {}
local next_due = -2 -- unknown: look it up below
if fast then
  local shard = shard_of_day[today]
  pull(shard, limit, taken)
  local top = rcall('ZRANGE', shard, 0, 0, 'WITHSCORES')
  if #top > 0 then
    next_due = tonumber(top[2])
    rcall('SET', K_NEXT, next_due)
  else
    rcall('ZREM', K_DAYS, today)
  end
else
  for _, day in ipairs(wanted) do
    local shard = shard_of_day[day]
    local dry = pull(shard, limit - #taken, taken)
    if rcall('ZCARD', shard) == 0 then rcall('ZREM', K_DAYS, day) end
    -- Stop when the limit is reached, or at today's shard (later days hold nothing due).
    if not dry or day == today then break end
  end
end
for g, st in pairs(groups) do
  if st.added > 0 then rcall('HINCRBY', K_GROUPS, g, st.added) end
end
-- The groups' pace as this call moved it; entries two days past their time go, and the key goes two
-- days after its latest: a group's state lasts while it is busy, and two days more.
if g_touched then
  local tats = {}
  for g, tat in pairs(gtat) do
    tats[#tats + 1] = string.format('%.3f', tat)
    tats[#tats + 1] = g
  end
  variadic('ZADD', K_GROUP_TAT, tats)
  rcall('ZREMRANGEBYSCORE', K_GROUP_TAT, '-inf', now - GRACE_MS)
  local last = rcall('ZRANGE', K_GROUP_TAT, -1, -1, 'WITHSCORES')
  if last[2] then rcall('PEXPIRE', K_GROUP_TAT, math.max(0, math.ceil(tonumber(last[2]) - now)) + GRACE_MS) end
end
if #admit > 0 then variadic('HSET', K_GADMIT, admit) end
-- Released jobs (admitted, waiting in their shard) that expired leave their admissions: their
-- groups' next held jobs go into today's shard; "next" is then looked up again.
if #unadmit > 0 then
  group_release(unadmit, now, ARGV[A + 9])
  next_due = -2
end
out[#out + 1] = #expired
for _, id in ipairs(expired) do out[#out + 1] = id end
out[#out + 1] = #trimmed
for _, id in ipairs(trimmed) do out[#out + 1] = id end

if next_due == -2 then next_due = reset_next() end
out[2] = next_due
out[3] = pace(#taken)
settle_cap(#taken, next_due)
if capped_back then out[3] = -2 end

if #taken > 0 then
  local deadline = now + lease_ms
  local inflight, leases = {}, {}
  for i, id in ipairs(taken) do
    inflight[#inflight + 1] = deadline
    inflight[#inflight + 1] = id
    leases[#leases + 1] = id
    leases[#leases + 1] = prefix .. i
  end
  variadic('ZADD', K_INFLIGHT, inflight)
  variadic('HSET', K_LEASES, leases)
  -- Keep "leasenext" a lower bound of every lease deadline: the safety-net poll reads it with
  -- "next", in the same MGET, to find expired leases in any partition within a poll.
  local lease_next = tonumber(rcall('GET', K_LEASE_NEXT))
  if not lease_next or deadline < lease_next then rcall('SET', K_LEASE_NEXT, deadline) end
  for _, id in ipairs(taken) do
    out[#out + 1] = id
    out[#out + 1] = recs_of[id]
  end
end
return out
