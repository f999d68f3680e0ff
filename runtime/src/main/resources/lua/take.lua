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
local flow = rcall('MGET', K_PAUSED, K_RATE, K_RATE_TAT, K_HELD, K_MAX_INFLIGHT, K_CAPPED, K_GROUP_RATE, K_LNEXT)
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
-- A list of days cut at 32: due days may lie beyond it (see "stopped" below).
local days_cut, lane_cut = false, {}
-- Every shard this call needs (plain days, lane days, the lanes' put-off days below), asked for in
-- one DQNEEDDAY: a taker learns them in one more call, not in up to three (its budget), which a
-- day's rollover between them would exceed.
local required = {}
local function require_all(codes)
  for _, c in ipairs(codes) do required[#required + 1] = c end
end
if fast then
  require_all({ today })
elseif due then
  -- At most 32 shards per call: a backlog spread over more past days is taken over several calls.
  local days = rcall('ZRANGEBYSCORE', K_DAYS, '-inf', today, 'LIMIT', 0, 32)
  for i = 1, #days do wanted[i] = tonumber(days[i]) end
  days_cut = #days == 32 and wanted[32] ~= today
  require_all(wanted)
end
-- Lanes (lib.lua): when lnext is due, each lane's days up to today (at most 32 per lane and call),
-- their shards named before any write. Lanes 1 and 2 are served before the plain days, 4 and 5
-- after, each oldest day first: a higher priority is always taken first. A topic that never used
-- priorities has no lnext: nothing read, nothing passed.
local lhead = tonumber(flow[8])
local lane_due = lhead and lhead <= now and limit > 0
local lane_codes = {}
if lane_due then
  local need = {}
  -- The four lanes' days in one read, in code order (lane 1's first): what a lane's own read would
  -- give, for each lane whose due codes it covers (it holds all there are up to lane 5's today, or
  -- it reaches past that lane's today); a lane it does not cover (the later days of the lanes before
  -- took its room: lane jobs spread over many future days, or a backlog over many past ones) reads
  -- its own as before. 32 codes: a small reply when they are mostly future days, at most one read
  -- more than one per lane when the read falls short.
  local LDAYS_READ = 32
  local all = rcall('ZRANGE', K_LDAYS, LANE, 5 * LANE + today, 'BYSCORE', 'LIMIT', 0, LDAYS_READ)
  for i = 1, #all do all[i] = tonumber(all[i]) end
  local reach = #all < LDAYS_READ and math.huge or all[#all]
  for _, lane in ipairs({ 1, 2, 4, 5 }) do
    local codes
    if reach > lane * LANE + today then
      codes = {}
      for _, c in ipairs(all) do
        if c >= lane * LANE and c <= lane * LANE + today and #codes < 32 then codes[#codes + 1] = c end
      end
    else
      codes = rcall('ZRANGE', K_LDAYS, lane * LANE, lane * LANE + today, 'BYSCORE', 'LIMIT', 0, 32)
      for i = 1, #codes do codes[i] = tonumber(codes[i]) end
    end
    for i = 1, #codes do need[#need + 1] = codes[i] end
    lane_cut[lane] = #codes == 32 and codes[32] ~= code_of(lane, today)
    lane_codes[lane] = codes
  end
  require_all(need)
end
-- A take under a group rate limit may put a due job of any lane off to its group's turn, into that
-- lane's shard of the turn's day (see "The group rate limit" below): held lane jobs start from
-- gheld whether or not lnext is due. So today's and tomorrow's shard of every lane are named before
-- any write, once a topic's lanes or groups are in use: a put-off then never parks a job before now
-- (the end of an older lane day passed by chance) and never needs a shard it was not given.
local group_rate = tonumber(flow[7]) or tonumber(ARGV[A + 12])
if group_rate > 0 and limit > 0 and (lhead or group_limit > 0) then
  local need, tomorrow = {}, day_of(now + DAY_MS)
  for _, lane in ipairs({ 1, 2, 4, 5 }) do
    need[#need + 1] = code_of(lane, today)
    need[#need + 1] = code_of(lane, tomorrow)
  end
  require_all(need)
end
-- A topic whose group-max-in-flight was turned off (0 in this call) while its groups held jobs
-- back releases them below (and the carried acks release some under the stored limit), into
-- today's shard of each one's lane: named here, before any write (a job of a lane whose shard was
-- not passed would go into the plain one and be served as priority 3). The EXISTS that decides it
-- is the one the release below would send anyway; one more for a take not due that carries acks.
local ungroup = group_limit <= 0 and (due or lane_due or tonumber(ARGV[A + 13]) > 0)
  and rcall('EXISTS', K_GHELD) == 1
if ungroup then
  require_all({ today, code_of(1, today), code_of(2, today), code_of(4, today), code_of(5, today) })
end
do
  local err = require_days(required)
  if err then return err end
end
-- The earliest runAt of both bounds (-1 when neither holds one): what the caller sleeps until.
local function earliest(a, b)
  if not a or a < 0 then return b or -1 end
  if not b or b < 0 then return a end
  return math.min(a, b)
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
-- jobs may all be held, none in a shard for a take to meet. So do the groups a fill left below
-- their limit (lib.lua's GROUP_REFILL), read with the limit; a fill here that stops at its bound
-- again (refill_left) has this take end with "next" due, so that a take follows at once.
local refill_left = false
if group_limit > 0 then
  local read = rcall('HMGET', K_GROUPS, '', GROUP_REFILL)
  local stored = tonumber(read[1])
  local order, ending = {}, {}
  local function fill(g)
    if not ending[g] then
      ending[g] = 0
      order[#order + 1] = g
    end
  end
  if stored ~= group_limit then
    rcall('HSET', K_GROUPS, '', group_limit)
    if not stored or group_limit > stored then
      for _, m in ipairs(rcall('ZRANGE', K_GHELD, 0, 999)) do fill((held_split(m))) end
    end
  end
  if read[2] then
    rcall('HDEL', K_GROUPS, GROUP_REFILL)
    for g in string.gmatch(read[2], '[^%z]+') do fill(g) end
  end
  if #order > 0 then
    local n
    n, refill_left = group_fill(order, ending, now, ARGV[A + 9])
    released = released + n
  end
end
-- A topic whose group-max-in-flight was turned off (0 in this call) while its groups held jobs
-- back: nothing holds them any more. Back into today's shard, due, before this take looks: at
-- their own runAt when it falls on today, else from today's first millisecond on, their runAt
-- rewritten as a release does, in their order (a later job of the group due on an older day would
-- go first). The stored limit goes once none is left, so that a job still admitted frees its slot
-- without a limit. One EXISTS per due take of such a topic (above). Due counts what the carried acks
-- released too: `due` was decided before they ran, and a group whose jobs were all held had
-- nothing in a shard until its ack released the next one (the others would stay held for good).
-- The carried acks may have released the last held jobs meanwhile.
-- Set once this call put jobs into a plain shard without lowering "next" (a put-off, see flush_offs;
-- or a release of the groups' held jobs at its end), or took a lane job's plain twin out of one
-- (take_held, the ungroup release below): "next" is then looked up at the end.
local plain_put = false
local members = ungroup and rcall('ZRANGE', K_GHELD, 0, 999) or {}
if #members > 0 then
  rcall('ZREM', K_GHELD, unpack(members))
  local ids, runs, lanes = {}, {}, {}
  for i, m in ipairs(members) do
    local _, run_at, id, lane = held_split(m)
    ids[i], runs[i], lanes[i] = id, run_at, lane
  end
  local recs = rcall('HMGET', K_JOBS, unpack(ids))
  -- A twin (lib.lua's twins_of; two members of one job among these) is dropped, as a stale member.
  local twins, moved = twins_of(ids, 1, #ids, recs), {}
  -- Into today's shard of each job's lane (the plain one when that was not passed; a priority-3
  -- member's lane is its record's priority, as lib.lua's group_fill places it).
  local records, due_at, early, count = {}, {}, day_start(today), 0
  for i, id in ipairs(ids) do
    if recs[i] and not twins[i] and not moved[id] and not stale_held(recs[i], runs[i], lanes[i]) then
      moved[id] = true
      local at = runs[i]
      if lanes[i] ~= 3 or day_of(at) ~= today then
        -- A lane member's runAt is its record's (the member keeps it to 10 ms). Its plain twin
        -- goes (as take_held's does): left on a day before today, where the lane round does not
        -- look for it, a take would lease the job again or before a retry's runAt. Its shard is at
        -- hand when the take is due and the day among the oldest 32.
        at = lanes[i] ~= 3 and decode(recs[i]).run_at or at
        if lanes[i] ~= 3 and drop_plain_twin(id, at) then plain_put = true end
        if day_of(at) ~= today then
          at, early = math.min(now, early), early + 1
          records[#records + 1] = id
          records[#records + 1] = with_run_at(recs[i], at)
        end
      end
      local code = code_of(lanes[i] == 3 and priority_of(recs[i]) or lanes[i], today)
      if not shard_of_day[code] then code = today end
      local list = due_at[code]
      if not list then
        list = { lowest = at }
        due_at[code] = list
      end
      list[#list + 1] = at
      list[#list + 1] = id
      list.lowest = math.min(list.lowest, at)
      count = count + 1
    end
  end
  if count > 0 then
    if #records > 0 then variadic('HSET', K_JOBS, records) end
    for code, list in pairs(due_at) do
      variadic('ZADD', shard_of_day[code], list)
      if code >= LANE then
        rcall('ZADD', K_LDAYS, code, code)
        if not lhead or list.lowest < lhead then
          lhead = list.lowest
          rcall('SET', K_LNEXT, lhead)
        end
        -- Its lanes' days were not read above when lnext was not due yet: today's is enough (the
        -- released jobs are due, and an older lane day would have made lnext due).
        if not lane_due then
          lane_due = limit > 0
          for _, lane in ipairs({ 1, 2, 4, 5 }) do lane_codes[lane] = lane_codes[lane] or {} end
        end
        -- (Not after a lane's list cut at 32 days: its older due days go first, as below.)
        local lane_list = lane_codes[floor(code / LANE)]
        local listed = lane_cut[floor(code / LANE)] == true
        for _, c in ipairs(lane_list) do listed = listed or c == code end
        if not listed then lane_list[#lane_list + 1] = code end
      else
        rcall('ZADD', K_DAYS, today, today)
        if not head or list.lowest < head then
          head = list.lowest
          rcall('SET', K_NEXT, list.lowest)
        end
      end
    end
    released = released + count
  end
  if rcall('EXISTS', K_GHELD) == 0 then rcall('HDEL', K_GROUPS, '', GROUP_REFILL) end
end
-- A carried ack that freed a group's slot put its next job into today's shard, due now: this take
-- may have it (today's shard is always passed).
-- A released job of a lane went into today's shard of its lane when that was passed (else into the
-- plain one): this take may have it too.
if released > 0 and limit > 0 then
  head = tonumber(rcall('GET', K_NEXT))
  if not head or head > now then
    -- only lane jobs were released
  elseif not due then
    due = true
    fast = day_of(head) == today
  elseif not fast then
    -- Not after a list of days cut at 32: the due days beyond the cut are older than the released
    -- jobs (due now), and go first; the take stops at the cut, and the next one gets to today.
    local listed = days_cut
    for _, d in ipairs(wanted) do listed = listed or d == today end
    if not listed then wanted[#wanted + 1] = today end
  end
  local l = tonumber(rcall('GET', K_LNEXT))
  if l and l <= now then
    lhead = l
    for _, lane in ipairs({ 1, 2, 4, 5 }) do
      local list = lane_codes[lane] or {}
      lane_codes[lane] = list
      local code = code_of(lane, today)
      local listed = lane_cut[lane] == true
      for _, c in ipairs(list) do listed = listed or c == code end
      if not listed and shard_of_day[code] then list[#list + 1] = code end
    end
    lane_due = true
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

local out = { now, earliest(head, lhead), 0, held, #stale }
for _, id in ipairs(stale) do out[#out + 1] = id end
if (due or lane_due) and room and room < limit then
  limit = room
  due = due and limit > 0
  lane_due = lane_due and limit > 0
end
if not due and not lane_due then
  out[#out + 1] = 0
  out[#out + 1] = 0
  out[3] = pace(0)
  -- A fill that stopped at its bound (above) left "next" due: the reply says so too.
  if refill_left and (out[2] < 0 or out[2] > now) then out[2] = now end
  if room and out[2] >= 0 then settle_cap(0, out[2]) end
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
-- The gheld members take_held may take out (admit or drop) for the whole call beyond the first
-- look per job met: a group holding many stale or expired members costs this take at most SCAN of
-- them (its next jobs then wait for the next take, as they did before take_held went on past them).
local gheld_left = SCAN
local looked, groups, recs_of, admit = 0, {}, {}, {}
-- The ids this call took, held, put off or buried: a second entry of one met later in the call (a
-- twin, lib.lua's twins_of: lane and plain, or a gheld member and an entry) is dropped, never a
-- second lease, hold or burial.
local seen = {}
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
-- Of a lane's shards, when the job is one of a lane: it stays in its lane.
-- nil when no shard of the lane was passed. Worked out once per lane and call (a look at every code
-- passed, up to ~200, for each of up to SCAN put-offs otherwise).
local last_of_lane = {}
local function last_passed_ms(lane)
  local known = last_of_lane[lane]
  if known ~= nil then return known or nil end
  local last = nil
  local of = lane == 3 and 0 or lane
  for d in pairs(shard_of_day) do
    if floor(d / LANE) == of and (not last or d > last) then last = d end
  end
  last_of_lane[lane] = last and day_start(last % LANE) + DAY_MS - 1 or false
  return last_of_lane[lane] or nil
end
-- Puts a due job (its record rec) off to its turn, as the scheduled job it stays (its admission,
-- when it has one, stays with it): written by flush_offs, once the job is out of its shard or
-- gheld (a round of pull removes the jobs it met after looking at them all).
-- The lane of the shard being pulled (3: a plain day).
local cur_lane = 3
local offs = {}
-- (plain_put: declared above the ungroup release.)
-- A lane job whose lane has no shard passed that ends after now (never so when the take required
-- today's and tomorrow's, above) goes to the plain shard, where every script looks for it too
-- (codes_of), rather than into the past (a busy loop of takes) or into no key (a lost job).
local function put_off(id, rec, turn, lane)
  local at = turn
  if not shard_of_day[code_of(lane, day_of(at))] then
    local last = lane ~= 3 and last_passed_ms(lane)
    if last and last >= now then
      at = math.min(turn, last)
    else
      lane = 3
      if not shard_of_day[day_of(at)] then at = math.min(turn, last_passed_ms(3)) end
    end
  end
  offs[#offs + 1] = { id, rec, at, lane }
end
local function flush_offs()
  for _, o in ipairs(offs) do
    local id, at = o[1], o[3]
    local code = code_of(o[4], day_of(at))
    if code < LANE then plain_put = true end
    rcall('HSET', K_JOBS, id, with_run_at(o[2], at))
    rcall('ZADD', shard_of_day[code], at, id)
    rcall('ZADD', code >= LANE and K_LDAYS or K_DAYS, code, code)
    -- lnext bounds the lanes' runAts from below: a take that pulled no lane (lnext not due) ends
    -- with lhead as it found it, and a job put into a lane shard below it would never be served.
    if code >= LANE and (not lhead or at < lhead) then
      lhead = at
      rcall('SET', K_LNEXT, at)
    end
  end
  offs = {}
end
-- put_off when the group rate limit does not let a due job (id, its record rec) of group g
-- ('' or false = none) start now; true when it was put off. It stays in its lane (lane, else the
-- lane being pulled).
local function off_by_rate(g, id, rec, lane)
  if not g_interval or not g or g == '' or not rec then return false end
  local turn = group_turn(g, id)
  if not turn then return false end
  put_off(id, rec, turn, lane or cur_lane)
  return true
end

-- A job's place in its group's (priority, runAt) order, as gheld sorts its members (a lane's runAt
-- to 10 ms below, as its member keeps it), as a number: Lua compares strings with strcoll, under
-- the locale Redis sets, not bytewise as ZRANGEBYLEX does.
local function held_rank(lane, run_at)
  if lane ~= 3 then run_at = floor(run_at / 10) * 10 end
  return lane * 1e14 + run_at
end
-- A group below its limit that holds jobs back (its limit was raised, or a release found a member
-- without a record) starts those that come no later than upto (the held_rank of the job the take
-- met) first, taken straight out of gheld in (priority, runAt) order, up to room. Returns how many
-- were admitted, what is known of the group's held jobs left (the held_rank of the first, false
-- when none is left), how many of the admitted the group rate limit put off (admitted, not
-- taken), and how many members it took out of gheld (admitted or dropped).
-- A lane member started, put off or buried takes its job's plain twin (see lib.lua's twins_of) with
-- it, as group_fill's release does: left, a take would lease the job again (an older release's take
-- reads neither inflight nor dead), or before a retry's runAt. Its shard is at hand when the take
-- is due (every plain day up to today, the oldest 32). "next" is then looked up at the end (it may
-- have been the twin's runAt). One ZREM per lane job started from gheld.
local function unplain(id, rec)
  if drop_plain_twin(id, run_at_of(rec)) then plain_put = true end
end
local function take_held(g, room, upto, taken)
  local members = held_of(g, room + 1)
  local ids, ranks, lanes, runs = {}, {}, {}, {}
  for k, m in ipairs(members) do
    local _
    _, runs[k], ids[k], lanes[k] = held_split(m)
    ranks[k] = held_rank(lanes[k], runs[k])
  end
  local n = 0
  while n < #members and n < room and ranks[n + 1] <= upto do n = n + 1 end
  local first_left = ranks[n + 1] or false
  if n == 0 then return 0, first_left, 0, 0 end
  rcall('ZREM', K_GHELD, unpack(members, 1, n))
  local recs = rcall('HMGET', K_JOBS, unpack(ids, 1, n))
  local twins = twins_of(ids, 1, n, recs)
  local got, off = 0, 0
  for k = 1, n do
    local id = ids[k]
    if recs[k] and (seen[id] or twins[k] or stale_held(recs[k], runs[k], lanes[k])) then
      -- dropped (out of gheld above), not admitted: its plain entry is the job, or its twin
      -- was admitted, leased or buried (by this call, or by an older release's take)
    elseif recs[k] and expire(id, recs[k]) then
      -- not admitted: a held job has no slot yet
      seen[id] = true
      if lanes[k] ~= 3 then unplain(id, recs[k]) end
    elseif recs[k] then
      seen[id] = true
      if lanes[k] ~= 3 then unplain(id, recs[k]) end
      if off_by_rate(g, id, recs[k], lanes[k] == 3 and priority_of(recs[k]) or lanes[k]) then
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
  return got, first_left, off, n
end
-- An entry of a lane shard that its record no longer matches (runAt other than its score, or another
-- priority): a release before priorities moved or replaced the job (its reschedule, extend or
-- replace looks in the plain shard only, and puts the job there), and left this entry behind. The
-- round drops it (its ZREM) rather than lease the job before its runAt, or twice. A record-less
-- entry (an older cancel) is not stale here: it is taken as before, and the caller drops it. Costs a
-- compare per lane job met.
-- An entry that matches its record may have a plain twin at the same runAt (such a move to the
-- runAt the job had, lib.lua's twins_of): it goes with the entry met, when its shard was passed. One
-- ZREM per lane job met whose record carries its priority as a mark written before the prefix: a
-- prefixed record has no twin (a release before priorities rewrites the record without the prefix
-- when it moves the job, and the entry is then stale; this release writes the prefix when it
-- starts, moves or cancels a held lane job, and takes the plain twin out with the gheld member:
-- take_held's unplain, lib.lua's drop_plain_twin). The twin may have been taken, held or
-- buried first (in this call: seen; or by an earlier call of either release: busy, the id in
-- flight or dead, read per round): then the entry is stale. In a plain shard, an entry whose record
-- carries a priority is a lane job's twin (or one an older release snoozed, reclaimed or requeued
-- there): stale when the job is in flight or dead. Its priority prefix is its first byte ('0' or '+', see lib.lua's encode); the mark of a
-- record written before the prefix is found as expire finds its own (a memchr; the head only above
-- 32 KB): a record with neither costs nothing more.
local PRIORITY_IN_HEAD = '^[^\n]*' .. PRIORITY_MARK
local function stale_entry(id, rec, score, busy)
  if seen[id] then return true end
  if not rec then return false end
  if cur_lane == 3 then
    local first = string.byte(rec, 1)
    if first == 43 or first == 48 then
      -- a prefix, or the runAt 0: priority_of tells
    elseif #rec > HEAD_ONLY_ABOVE then
      if not string.find(rec, PRIORITY_IN_HEAD) then return false end
    elseif not string.find(rec, PRIORITY_MARK, 1, true) then
      return false
    end
    if priority_of(rec) == 3 then return false end
    return (rcall('ZSCORE', K_INFLIGHT, id) or rcall('ZSCORE', K_DEAD, id)) and true or false
  end
  local e = string.find(rec, '[,\n]')
  local run_at = tonumber(string.sub(rec, 1, e - 1), 36)
  if run_at ~= tonumber(score) or priority_of(rec) ~= cur_lane then return true end
  if busy then return true end
  if prefix_of(rec, e) then return false end
  local day = day_of(run_at)
  local plain = shard_of_day[day]
  if plain and rcall('ZREM', plain, id) == 1 and rcall('ZCARD', plain) == 0 then rcall('ZREM', K_DAYS, day) end
  return false
end
-- Of a lane round's ids, which are in flight or dead (stale_entry): two reads per round. Nothing read
-- in a plain shard.
local NONE = {}
local function busy_of(ids)
  if cur_lane == 3 or #ids == 0 then return NONE end
  local inflight = rcall('ZMSCORE', K_INFLIGHT, unpack(ids))
  local dead = rcall('ZMSCORE', K_DEAD, unpack(ids))
  local out = {}
  for k = 1, #ids do out[k] = inflight[k] or dead[k] end
  return out
end
-- Moves up to want due jobs of a shard into taken (held ones aside); true when the shard has no
-- due job left. A round reads want jobs, and twice as many as the last when that one held jobs
-- back: a big group's backlog is set aside in a few rounds even by a take with one free slot.
local function pull(shard, want, taken)
  if group_limit <= 0 then
    -- Expired jobs, and those put off by the group rate limit, take no slot: the round reads again
    -- for them, up to SCAN jobs met in all.
    while true do
      local ids, scores = nil, {}
      if cur_lane == 3 then
        ids = rcall('ZRANGEBYSCORE', shard, '-inf', now, 'LIMIT', 0, want)
      else
        local found = rcall('ZRANGEBYSCORE', shard, '-inf', now, 'WITHSCORES', 'LIMIT', 0, want)
        ids = {}
        for i = 1, #found, 2 do
          ids[#ids + 1] = found[i]
          scores[#ids] = found[i + 1]
        end
      end
      if #ids > 0 then variadic('ZREM', shard, ids) end
      local got = 0
      for i = 1, #ids, CHUNK do
        local part = { unpack(ids, i, math.min(i + CHUNK - 1, #ids)) }
        local recs = rcall('HMGET', K_JOBS, unpack(part))
        local busy = busy_of(part)
        for j = 1, #part do
          if stale_entry(part[j], recs[j], scores[i + j - 1], busy[j]) then
            -- dropped (out of the shard with the round)
          else
            seen[part[j]] = true
            if not expire(part[j], recs[j]) and not off_by_rate(recs[j] and group_of(recs[j]), part[j], recs[j]) then
              taken[#taken + 1] = part[j]
              recs_of[part[j]] = recs[j] or ''
              got = got + 1
            end
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
    local busy = busy_of(ids)
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
      local stale = stale_entry(id, recs[i], runs[i], busy[i])
      if stale then
        g, take_it = '', false
      elseif recs[i] and expire(id, recs[i]) then
        if admitted[i] then unadmit[#unadmit + 1] = { id, admitted[i] } end
        take_it = false
      elseif g ~= '' then
        local st = groups[g]
        local run = tonumber(runs[i])
        local prio = priority_of(recs[i])
        local rank = held_rank(prio, run)
        -- Below its limit, the group's held jobs that come no later than this one start first
        -- ((priority, runAt) order, as gheld sorts). What it holds matters only there: at its
        -- limit, the job is held anyway. st.held: nil = not looked yet, false = holds none, else
        -- the held_rank of its first held job. The members take_held drops (stale, twins, expired,
        -- without a record) leave their room to the next ones: it goes on while the group has room
        -- and its first held job still comes no later, within the call's gheld_left (one member a
        -- job met once that is spent).
        local looked = false
        while st.c < group_limit and want > 0 and st.held ~= false and (st.held == nil or st.held <= rank)
            and (not looked or gheld_left > 0) do
          local got, off, n
          got, st.held, off, n = take_held(g, math.min(group_limit - st.c, want, math.max(gheld_left, 1)), rank, taken)
          st.c, st.added, want = st.c + got, st.added + got, want - got + off
          gheld_left, looked = math.max(0, gheld_left - n), true
          if n == 0 then break end
        end
        if seen[id] then
          -- take_held started the job from its gheld member: this entry is its twin (dropped)
          stale, g, take_it = true, '', false
        elseif st.c >= group_limit or want <= 0 then
          held[#held + 1] = 0
          held[#held + 1] = held_member(g, run, id, prio)
          take_it = false
        else
          st.c, st.added = st.c + 1, st.added + 1
          admit[#admit + 1] = id
          admit[#admit + 1] = g
        end
      end
      if not stale then seen[id] = true end
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
-- Set once a shard comes back with due jobs left (the take has what it wants, or it looked at SCAN
-- jobs): every later phase (a lower priority, a later day) is skipped, so that no job is taken while
-- one of a higher priority, or older, stays due.
local stopped = false
-- Set when a lane shard this call pulled still holds a due entry at its end: lnext, a lower bound of
-- the lanes' runAts that the take found due, stays one (the take only removed lane jobs, and any it
-- put into a lane lowered it), and it is due as it should be. The take then keeps it rather than
-- set it exactly (reset_lnext: up to 9 reads and a write per take), which only a take that may have
-- left no lane job due needs: else its taker would come back at once for nothing.
local lane_left_due = false
-- A lane's due days, oldest first, while the take wants more.
local function pull_lane(lane)
  if stopped then return end
  cur_lane = lane
  for _, code in ipairs(lane_codes[lane] or {}) do
    if limit - #taken <= 0 then break end
    local shard = shard_of_day[code]
    local dry = pull(shard, limit - #taken, taken)
    -- Its first entry, as cheap as its size: whether it is empty (out of ldays), and whether due.
    local top = rcall('ZRANGE', shard, 0, 0, 'WITHSCORES')
    if #top == 0 then
      rcall('ZREM', K_LDAYS, code)
    elseif tonumber(top[2]) <= now then
      lane_left_due = true
    end
    if not dry then
      stopped = true
      break
    end
  end
  -- Its days were cut at 32: later ones may hold due jobs, taken by the next call first.
  stopped = stopped or lane_cut[lane] == true
  cur_lane = 3
end
if lane_due then
  pull_lane(1)
  pull_lane(2)
end
-- Whether this call took jobs out of the plain days (or put some in, flush_offs): else "next", a
-- lower bound of their runAts that every step putting a job there lowers, is still one, and the
-- call keeps it (head: what it read, or what it wrote itself) rather than look it up again.
local plain_pulled = false
if not due or stopped or limit - #taken <= 0 then
  -- the plain days are left as they are
elseif fast then
  plain_pulled = true
  local shard = shard_of_day[today]
  stopped = not pull(shard, limit - #taken, taken)
  local top = rcall('ZRANGE', shard, 0, 0, 'WITHSCORES')
  if #top > 0 then
    next_due = tonumber(top[2])
    rcall('SET', K_NEXT, next_due)
  else
    rcall('ZREM', K_DAYS, today)
  end
else
  plain_pulled = true
  for _, day in ipairs(wanted) do
    local shard = shard_of_day[day]
    local dry = pull(shard, limit - #taken, taken)
    if rcall('ZCARD', shard) == 0 then rcall('ZREM', K_DAYS, day) end
    stopped = not dry
    -- Stop when the limit is reached, or at today's shard (later days hold nothing due).
    if not dry or day == today then break end
  end
  stopped = stopped or days_cut
end
if lane_due then
  pull_lane(4)
  pull_lane(5)
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
  local _, more = group_release(unadmit, now, ARGV[A + 9])
  refill_left = refill_left or more
  next_due, plain_put = -2, true
end
out[#out + 1] = #expired
for _, id in ipairs(expired) do out[#out + 1] = id end
out[#out + 1] = #trimmed
for _, id in ipairs(trimmed) do out[#out + 1] = id end

if next_due == -2 then
  -- A missing "next" is looked up too (one ZRANGE of days): it is absent only when no plain job is
  -- scheduled, or when something lost it, and then a take of the lanes still puts it back (review
  -- perf-2 S2: the safety-net poll reads nothing else).
  if plain_pulled or plain_put or not head then
    next_due = reset_next()
  else
    next_due = head
  end
end
if refill_left and (next_due < 0 or next_due > now) then
  next_due = now
  rcall('SET', K_NEXT, now)
end
-- (lane_due means lnext was there and due.)
local lane_next = lhead
if lane_due and not lane_left_due then lane_next = reset_lnext() end
out[2] = earliest(next_due, lane_next)
out[3] = pace(#taken)
settle_cap(#taken, out[2])
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
