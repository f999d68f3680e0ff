-- lib.lua: shared prelude, prepended by Scripts.java to every other script in this folder.
--
-- Every script runs on one topic partition; Java passes the same leading keys to all of them:
--   KEYS[1] -> jobs      HASH   job id -> record (see encode/decode below)
--   KEYS[2] -> days      ZSET   non-empty day shards, member and score yyyymmdd
--   KEYS[3] -> next      STRING earliest runAt ms over all shards (a lower bound; absent = nothing scheduled)
--   KEYS[4] -> inflight  ZSET   job id -> lease deadline ms
--   KEYS[5] -> leases    HASH   job id -> lease token of the current holder
--   KEYS[6] -> dead      ZSET   job id -> time of death ms
--   KEYS[7] -> leasenext STRING a lower bound of every lease deadline in inflight (absent = none
--                               known); take lowers it, reclaim sets it exactly
--   KEYS[8] -> done      ZSET   job id -> time it succeeded ms, for topics with a dedup window
--                               (absent otherwise); the key expires a window after its last write
--   KEYS[9] -> ticks     HASH   recurring schedule name -> the last tick it fired (or skipped) into
--                               this partition, epoch ms (see enqueue.lua)
--   KEYS[10] -> paused   STRING Redis time (ms) the topic was paused at; absent = taken as usual.
--                               Written to every partition of the topic (see flow.lua)
--   KEYS[11] -> ratelimit STRING the topic's rate limit set by an operator, jobs/s over all its
--                               partitions (absent = the caller's configuration, passed in ARGV)
--   KEYS[12] -> ratetat  STRING the partition's rate limit state (GCRA's theoretical arrival time,
--                               ms); expires once it is in the past
--   KEYS[13] -> forgotten STRING set when the partition's topic was forgotten (DELETE /topics/{t},
--                               or its retention); expires after a while. An enqueue into the
--                               emptied partition that finds it tells Java to list the topic again
--                               (see forget.lua)
--   KEYS[14] -> callbacks ZSET  dead-job callback ("<diedAt ms>:<job id>", or "<diedAt ms>.<n>:<job id>"
--                               for the n-th death of the id in that millisecond) -> when it is next due,
--                               ms (also pushed out while a replica sends it: its claim)
--   KEYS[15] -> cbdata   HASH   dead-job callback -> "<tries>,<diedAt ms>,<last callback error>\n" +
--                               the job's record as it died (see encode); also for failed ones
--   KEYS[16] -> cbfailed ZSET   dead-job callback that failed for good -> time it gave up, ms
--   KEYS[17] -> cbnext   STRING when the partition's first pending callback is due, ms (the lowest
--                               score in callbacks); absent = none pending. What the replicas'
--                               callback poll reads, one MGET for all partitions (see cb_next)
--   KEYS[18] -> held     STRING Redis time (ms) until which the partition's topic is held: an HTTP
--                               target answered 429/503 with Retry-After (see flow.lua 'hold').
--                               Written to every partition of the topic; expires at that time
--   KEYS[19] -> maxinflight STRING the topic's concurrency cap set by an operator, jobs in flight at
--                               once over all its partitions (absent = the caller's configuration,
--                               passed in ARGV); a copy in every partition (see flow.lua 'cap')
--   KEYS[20] -> capped   STRING set (expiring) by a take that the concurrency cap held back while jobs
--                               were due: every script that frees a slot of the partition deletes it
--                               and wakes the takers (see free_slots), so that only a capped
--                               partition pays for a wake-up, and a held-back taker sleeps until then
--   KEYS[21] -> groups   HASH   group -> how many of the group's jobs are admitted (in flight, or
--                               released to run next: see gadmit); field '' = the topic's
--                               group-max-in-flight as the last take saw it (absent = no limit)
--   KEYS[22] -> gheld    ZSET   the jobs a take held back because their group was at its limit,
--                               all scores 0, member "<group>\0<runAt, 13 digits>\0<id>": a
--                               group's held jobs are one lexical range, in runAt order. A held
--                               job is scheduled (its record stays in jobs) but in no day shard
--   KEYS[23] -> gadmit   HASH   job id -> group, for every admitted job: the ones a count in groups
--                               stands for. A job leaving its admission (acked, failed, snoozed,
--                               reclaimed, drained, or a released one cancelled or moved) gives its
--                               slot to its group's first held job (see group_release)
--   KEYS[24] -> relayed  ZSET   outbox row token -> when it was relayed, ms: the transactional
--                               outbox's rows enqueued here in the last 24 h (see enqueue.lua);
--                               expires 24 h after its last write
--   KEYS[25] -> grouprate STRING the topic's group-rate-limit set by an operator, jobs/s per group
--                               (absent = the caller's configuration, passed in ARGV); a copy in
--                               every partition (see flow.lua 'grouprate')
--   KEYS[26] -> grouptat ZSET   the group rate limit's state (see take.lua): member <group> -> the
--                               group's GCRA theoretical arrival time, ms; member "\0<job id>" -> the
--                               time a job the limit put off was given (its turn, kept for it). The
--                               take drops entries a minute past their time; the key expires a
--                               minute after its latest
--   KEYS[27..26+k] -> day shards ZSET job id -> runAt ms, one per UTC day, for the days in ARGV[2..1+k]
-- ARGV[1] = k, the number of day shards passed; ARGV[2..1+k] = their days (yyyymmdd).
-- A script that needs a shard it was not given fails with "DQNEEDDAY d1 d2 ..." before any write;
-- Java then adds those keys and calls again. Scripts never build key names themselves.
local rcall = redis.call
local K_JOBS, K_DAYS, K_NEXT, K_INFLIGHT, K_LEASES, K_DEAD = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local K_LEASE_NEXT, K_DONE, K_TICKS = KEYS[7], KEYS[8], KEYS[9]
local K_PAUSED, K_RATE, K_RATE_TAT = KEYS[10], KEYS[11], KEYS[12]
local K_FORGOTTEN = KEYS[13]
local K_CALLBACKS, K_CBDATA, K_CBFAILED, K_CBNEXT = KEYS[14], KEYS[15], KEYS[16], KEYS[17]
local K_HELD = KEYS[18]
local K_MAX_INFLIGHT, K_CAPPED = KEYS[19], KEYS[20]
local K_GROUPS, K_GHELD, K_GADMIT = KEYS[21], KEYS[22], KEYS[23]
local K_RELAYED = KEYS[24]
local K_GROUP_RATE, K_GROUP_TAT = KEYS[25], KEYS[26]
local DAY_MS = 86400000
-- Lua's unpack() is bounded by the C stack (LUAI_MAXCSTACK 8000): variadic calls go in chunks.
local CHUNK = 1000

local shard_count = tonumber(ARGV[1])
local shard_of_day = {}
for i = 1, shard_count do shard_of_day[tonumber(ARGV[1 + i])] = KEYS[26 + i] end
local A = 2 + shard_count -- first script-specific ARGV
local floor = math.floor

-- @optional: each paragraph below goes into a script only when the script (or a paragraph it
-- took) names what the paragraph defines: Scripts.java assembles them at load time. Lua creates
-- a closure per local function on every call, and the code a script carries is Redis memory and
-- GC work, so a script pays only for the functions it calls.

-- With several partitions, the scripts that meet an enqueue of an id in its home partition get
-- that partition's claims HASH after the day shards (absent = nil: one partition, nothing to
-- claim): job id -> "<partition>:<ms>:<group>", an id whose job a group put in another partition
-- (see claim.lua); ms is the Redis time of the claim while that enqueue is pending, negated once
-- it is done (every claim of an id has its own ms: a compare-and-set never meets an equal later one).
local K_CLAIMS = KEYS[27 + shard_count]
-- With a result retention, the scripts that move a job out of flight get instead the partition's
-- succeeded ZSET and results HASH (see keep_results below; absent = nil). A script given the claims
-- key has no results key: K_RESULTS is nil there, and forget_kept does nothing.
local K_SUCCEEDED, K_RESULTS = KEYS[27 + shard_count], KEYS[28 + shard_count]

local function now_ms()
  local t = rcall('TIME')
  return tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
end

-- yyyymmdd (UTC) of epoch ms, after H. Hinnant's civil_from_days; computed once per day a call
-- meets (the jobs of a batch mostly share a few days, and the arithmetic costs as much as a
-- Redis command).
local days_seen = {}
local function day_of(ms)
  local e = floor(ms / DAY_MS)
  local known = days_seen[e]
  if known then return known end
  local z = e + 719468
  local era = floor(z / 146097)
  local doe = z - era * 146097
  local yoe = floor((doe - floor(doe / 1460) + floor(doe / 36524) - floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + floor(yoe / 4) - floor(yoe / 100))
  local mp = floor((5 * doy + 2) / 153)
  local d = doy - floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  days_seen[e] = y * 10000 + m * 100 + d
  return days_seen[e]
end

-- epoch ms of 00:00 UTC of a yyyymmdd day (days_from_civil).
local function day_start(day)
  local y, m, d = floor(day / 10000), floor(day / 100) % 100, day % 100
  if m <= 2 then y = y - 1 end
  local era = floor(y / 400)
  local yoe = y - era * 400
  local mp = m > 2 and m - 3 or m + 9
  local doy = floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy
  return (era * 146097 + doe - 719468) * DAY_MS
end

-- Fails (before any write) unless every day in the list has its shard key passed in.
local function require_days(days)
  local missing = {}
  for _, d in ipairs(days) do
    if not shard_of_day[d] then missing[#missing + 1] = string.format('%d', d) end
  end
  if #missing > 0 then return redis.error_reply('DQNEEDDAY ' .. table.concat(missing, ' ')) end
  return nil
end

-- Record: "<runAt base36>[,<attempts>,<maxAttempts>[,<lastError>]]\n<payload json>"; decoded as
-- { run_at, attempts, max, err, trace, lost, retry, payload }.
-- Defaults are left out so that a fresh job costs only its runAt and payload (memory per job
-- is a benchmark target); lastError never holds a newline (Java strips them).
-- The W3C trace context of the enqueue, when it ran inside a trace, rides at the front of the
-- lastError field: "\30" (RS) + 50 hex digits (trace id, span id, flags) + the error. Every
-- script that rewrites a record keeps it, so retries and requeues stay in the enqueue's trace;
-- a release that predates it reads it as part of the error text (harmless during a rolling
-- update), never as a malformed record.
local TRACE_MARK, TRACE_LEN = '\30', 50
-- Lost attempts (leases that expired without an outcome, counted by reclaim.lua apart from
-- attempts) ride the same way, after the trace context when there is one: "\31" (US) + the
-- count in decimal + "\31" + the error. Absent = 0, so that records written before it read as
-- none lost, and a release that predates it shows it as part of the error text (and drops it
-- when it rewrites the error), never a malformed record.
local LOST_MARK = '\31'
-- A job's own retry backoff (the enqueue's "retry", see JobRetry.java) rides after the lost
-- attempts: "\29" (GS) + initial ms + "," + max ms + "\29" + the error, either number left empty
-- when not given. The scripts keep it as text: a failed attempt's delay is computed in Java
-- (fail.lua's ARGV); only reclaim.lua reads it, for the backoff of a lost attempt (no Java sees
-- those records first). Absent = the topic's backoff, so records written before it follow their
-- topic, and a release that predates it shows it as part of the error text (and drops it when it
-- rewrites the error), never a malformed record.
local RETRY_MARK = '\29'
-- A job's group (the enqueue's "group", see flow control) rides after its retry backoff: "\28"
-- (FS) + the group + "\28" + the error. Absent = no group. A release that predates it shows it
-- as part of the error text (and drops it when it rewrites the error), never a malformed record.
local GROUP_MARK = '\28'
-- A job's own limits (the enqueue's "timeoutMs" and "expiresAt") ride after its group: "\27"
-- (ESC) + timeout ms + "," + expiresAt epoch ms + "\27" + the error, either number left empty
-- when not given. Decoded as r.timeout (text, '' = the topic's attempt timeout: only Java reads
-- it) and r.expires (ms, nil = none: the scripts read it, see expired_by). Absent = neither, so
-- records written before it have none; a release that predates it shows it as part of the error
-- text (and drops it when it rewrites the error), never a malformed record.
local LIMIT_MARK = '\27'

-- base 36 of a non-negative integer, lowercase. The digits above the last three change once in
-- 36^3 ms (47 s): the runAts of a batch share them, so they are made once per call and kept;
-- the last three are bytes turned into a string by one string.char (a concatenation per digit
-- would make and hash a string per digit).
local B36_LOW = 46656 -- 36^3
local b36_high = {}
local function b36_digit(v) return v < 10 and 48 + v or 87 + v end
local function b36(n)
  local low = n % B36_LOW
  local high = (n - low) / B36_LOW
  local a = low % 36
  local b = (low - a) / 36 % 36
  local c = (low - a - b * 36) / 1296
  if high == 0 then
    if c > 0 then return string.char(b36_digit(c), b36_digit(b), b36_digit(a)) end
    if b > 0 then return string.char(b36_digit(b), b36_digit(a)) end
    return string.char(b36_digit(a))
  end
  local prefix = b36_high[high]
  if not prefix then
    local digits, i, h = {}, 14, high
    repeat
      local r = h % 36
      i = i - 1
      digits[i] = b36_digit(r)
      h = (h - r) / 36
    until h <= 0
    prefix = string.char(unpack(digits, i, 13))
    b36_high[high] = prefix
  end
  return prefix .. string.char(b36_digit(c), b36_digit(b), b36_digit(a))
end

-- The fields of a record's head (its text before the first newline) into r.
local function decode_head(head, r)
  local c1 = string.find(head, ',', 1, true)
  if not c1 then
    r.run_at = tonumber(head, 36)
    return r
  end
  r.run_at = tonumber(string.sub(head, 1, c1 - 1), 36)
  local c2 = string.find(head, ',', c1 + 1, true)
  r.attempts = tonumber(string.sub(head, c1 + 1, c2 - 1))
  local c3 = string.find(head, ',', c2 + 1, true)
  if c3 then
    r.max = tonumber(string.sub(head, c2 + 1, c3 - 1))
    r.err = string.sub(head, c3 + 1)
    if string.sub(r.err, 1, 1) == TRACE_MARK then
      r.trace = string.sub(r.err, 2, 1 + TRACE_LEN)
      r.err = string.sub(r.err, 2 + TRACE_LEN)
    end
    if string.sub(r.err, 1, 1) == LOST_MARK then
      local e = string.find(r.err, LOST_MARK, 2, true)
      local n = e and tonumber(string.sub(r.err, 2, e - 1))
      if n then
        r.lost = n
        r.err = string.sub(r.err, e + 1)
      end
    end
    if string.sub(r.err, 1, 1) == RETRY_MARK then
      local e = string.find(r.err, RETRY_MARK, 2, true)
      if e then
        r.retry = string.sub(r.err, 2, e - 1)
        r.err = string.sub(r.err, e + 1)
      end
    end
    if string.sub(r.err, 1, 1) == GROUP_MARK then
      local e = string.find(r.err, GROUP_MARK, 2, true)
      if e then
        r.group = string.sub(r.err, 2, e - 1)
        r.err = string.sub(r.err, e + 1)
      end
    end
    if string.sub(r.err, 1, 1) == LIMIT_MARK then
      local e = string.find(r.err, LIMIT_MARK, 2, true)
      local c = e and string.find(r.err, ',', 2, true)
      if c and c < e then
        r.timeout = string.sub(r.err, 2, c - 1)
        r.expires = tonumber(string.sub(r.err, c + 1, e - 1))
        r.err = string.sub(r.err, e + 1)
      end
    end
  else
    r.max = tonumber(string.sub(head, c2 + 1))
  end
  return r
end

local function decode(rec)
  local nl = string.find(rec, '\n', 1, true)
  return decode_head(string.sub(rec, 1, nl - 1), { payload = string.sub(rec, nl + 1), attempts = 0, max = 0,
    err = '', trace = '', lost = 0, retry = '', group = '', timeout = '' })
end

-- A record's group ('' = none), read as decode reads it (the mark counts only where decode looks
-- for it: an error text may hold the byte, in a record written before groups), without copying
-- its payload.
local function group_of(rec)
  local nl = string.find(rec, '\n', 1, true)
  local head = string.sub(rec, 1, nl - 1)
  if not string.find(head, GROUP_MARK, 1, true) then return '' end
  return decode_head(head, { attempts = 0, max = 0, err = '', trace = '', lost = 0, retry = '', group = '' }).group
end

local function encode(r)
  local head = b36(r.run_at)
  local err = r.err
  if (r.timeout and r.timeout ~= '') or r.expires then
    err = LIMIT_MARK .. (r.timeout or '') .. ',' .. (r.expires and string.format('%d', r.expires) or '') .. LIMIT_MARK .. err
  end
  if r.group and r.group ~= '' then err = GROUP_MARK .. r.group .. GROUP_MARK .. err end
  if r.retry and r.retry ~= '' then err = RETRY_MARK .. r.retry .. RETRY_MARK .. err end
  if r.lost and r.lost > 0 then err = LOST_MARK .. r.lost .. LOST_MARK .. err end
  if r.trace and r.trace ~= '' then err = TRACE_MARK .. r.trace .. err end
  if r.attempts > 0 or r.max > 0 or err ~= '' then
    head = head .. ',' .. r.attempts .. ',' .. r.max
    if err ~= '' then head = head .. ',' .. err end
  end
  return head .. '\n' .. r.payload
end

-- A record with its runAt replaced as text (the runAt leads it, up to its first ',' or newline),
-- without decoding the rest, the payload included.
local function with_run_at(rec, run_at)
  return b36(run_at) .. string.sub(rec, (string.find(rec, '[,\n]')))
end

-- Announces a partition's new earliest runAt on its wake-up channel. A channel passed as
-- "!<name>" is a sharded channel (Redis 7, used on a Redis Cluster: the message stays on the
-- partition's own shard instead of being broadcast to every node); else classic pub/sub.
local function wake(channel, run_at)
  if string.sub(channel, 1, 1) == '!' then
    rcall('SPUBLISH', string.sub(channel, 2), run_at)
  else
    rcall('PUBLISH', channel, run_at)
  end
end

-- After a step that took jobs out of the partition's in-flight set: when a take was held back by
-- the topic's concurrency cap since the last such step (its "capped" mark), the mark goes and the
-- takers of every replica are woken with the partition's head, so that one of them takes the freed
-- slot at once (a lost message is made up for by the safety-net poll, which finds the mark gone).
-- One DEL (of an absent key, for a partition never capped): no publish, no other write.
local function free_slots(channel)
  if rcall('DEL', K_CAPPED) == 1 then
    local head = rcall('GET', K_NEXT)
    if head then wake(channel, head) end
  end
end

-- Puts one job into the shard of its runAt (the shard must have been passed in) and keeps
-- "next" a lower bound of every runAt; wakes sleeping takers when the job became the earliest.
local function schedule(id, run_at, channel)
  local day = day_of(run_at)
  rcall('ZADD', shard_of_day[day], run_at, id)
  rcall('ZADD', K_DAYS, day, day)
  local head = tonumber(rcall('GET', K_NEXT))
  if not head or run_at < head then
    rcall('SET', K_NEXT, run_at)
    wake(channel, run_at)
  end
end

-- Calls a variadic command with fixed leading args and a flat list, in CHUNK-sized pieces.
local function variadic(cmd, key, list)
  for i = 1, #list, CHUNK do
    rcall(cmd, key, unpack(list, i, math.min(i + CHUNK - 1, #list)))
  end
end

-- Deletes the kept successes (result retention) of ids whose newer job leaves without being kept
-- (cancelled, dead, or acked while Redis is full): they must not answer for an id that was a job
-- since. Nothing without the retention's keys.
local function forget_kept(ids)
  if K_RESULTS and #ids > 0 then
    variadic('ZREM', K_SUCCEEDED, ids)
    variadic('HDEL', K_RESULTS, ids)
  end
end

-- Groups (a topic with group-max-in-flight): a held job's member in gheld. A group's held jobs
-- are one lexical range of it, in runAt order.
local function held_member(group, run_at, id)
  return group .. '\0' .. string.format('%013d', run_at) .. '\0' .. id
end

-- A member's group, runAt and id.
local function held_split(m)
  local z = string.find(m, '\0', 1, true)
  return string.sub(m, 1, z - 1), tonumber(string.sub(m, z + 1, z + 13)), string.sub(m, z + 15)
end

-- The first n members of a group's held jobs, in runAt order.
local function held_of(group, n)
  return rcall('ZRANGEBYLEX', K_GHELD, '[' .. group .. '\0', '(' .. group .. '\1', 'LIMIT', 0, n)
end

-- Whether a scheduled job (its record r) is held back by its group: in gheld, in no day shard.
local function is_held(id, r)
  return r.group ~= '' and rcall('ZSCORE', K_GHELD, held_member(r.group, r.run_at, id)) ~= false
end

-- The admitted ones among ids, as {id, group} pairs: read before any write, so that a caller that
-- goes on to free them (group_release) can first check it was given today's shard, where a
-- released job goes (DQNEEDDAY before any write). One HMGET per chunk (of an absent key, for a
-- topic without groups).
local function admitted_of(ids)
  local out = {}
  for i = 1, #ids, CHUNK do
    local part = rcall('HMGET', K_GADMIT, unpack(ids, i, math.min(i + CHUNK - 1, #ids)))
    for j = 1, #part do
      if part[j] then out[#out + 1] = { ids[i + j - 1], part[j] } end
    end
  end
  return out
end

-- The release itself (group_release; take.lua when the limit was raised): each group of order,
-- its count less ending[g] (jobs leaving their admissions, 0 = none), takes its first held jobs up
-- to the stored limit. Returns how many jobs were released.
local function group_fill(order, ending, now, channel)
  local limit = tonumber(rcall('HGET', K_GROUPS, ''))
  local ids, groups_of = {}, {}
  local records, admit, due, missing = {}, {}, {}, {}
  -- Into today's shard, due now, admitted.
  local function release(id, rec, g)
    records[#records + 1] = id
    records[#records + 1] = with_run_at(rec, now)
    admit[#admit + 1] = id
    admit[#admit + 1] = g
    due[#due + 1] = now
    due[#due + 1] = id
  end
  for i = 1, #order, CHUNK do
    local part = { unpack(order, i, math.min(i + CHUNK - 1, #order)) }
    local counts = rcall('HMGET', K_GROUPS, unpack(part))
    for j, g in ipairs(part) do
      local c = math.max(0, (tonumber(counts[j]) or 0) - ending[g])
      -- Held jobs take the group up to its limit (more than the slots freed when the limit was
      -- raised); none stored: no limit, a held job per slot freed. At most CHUNK per group and
      -- call (one ZREM): the rest start as the group's jobs end, or when a take meets the group.
      local room = math.min(limit and limit - c or ending[g], CHUNK)
      if room > 0 then
        local members = held_of(g, room)
        if #members > 0 then
          rcall('ZREM', K_GHELD, unpack(members))
          for _, m in ipairs(members) do
            local _, _, id = held_split(m)
            ids[#ids + 1] = id
            groups_of[#ids] = g
          end
          c = c + #members
        end
      end
      if c > 0 then rcall('HSET', K_GROUPS, g, c) else rcall('HDEL', K_GROUPS, g) end
    end
  end
  if #ids == 0 then return 0 end
  for i = 1, #ids, CHUNK do
    local recs = rcall('HMGET', K_JOBS, unpack(ids, i, math.min(i + CHUNK - 1, #ids)))
    for j = 1, #recs do
      local k = i + j - 1
      if recs[j] then
        release(ids[k], recs[j], groups_of[k])
      else
        missing[#missing + 1] = groups_of[k] -- a member without a record: its slot was counted
      end
    end
  end
  -- A member without a record (none is left so by the scripts; a record written before groups
  -- could have been misread as grouped) gave its slot back: the group's next held job takes it.
  local retry = {}
  for _, g in ipairs(missing) do retry[g] = (retry[g] or 0) + 1 end
  for g, n in pairs(retry) do
    local got = 0
    while n > 0 do
      local members = held_of(g, n)
      if #members == 0 then break end
      rcall('ZREM', K_GHELD, unpack(members))
      for _, m in ipairs(members) do
        local _, _, id = held_split(m)
        local rec = rcall('HGET', K_JOBS, id)
        if rec then
          release(id, rec, g)
          n, got = n - 1, got + 1
        end
      end
    end
    -- The count had the missing ones: the ones found instead stay counted.
    if rcall('HINCRBY', K_GROUPS, g, got - retry[g]) <= 0 then rcall('HDEL', K_GROUPS, g) end
  end
  if #admit == 0 then return 0 end
  variadic('HSET', K_JOBS, records)
  variadic('HSET', K_GADMIT, admit)
  local day = day_of(now)
  variadic('ZADD', shard_of_day[day], due)
  rcall('ZADD', K_DAYS, day, day)
  local head = tonumber(rcall('GET', K_NEXT))
  if not head or now < head then
    rcall('SET', K_NEXT, now)
    wake(channel, now)
  end
  return #admit / 2
end

-- Ends the admissions of jobs that leave them (admitted_of: in flight no more, or a released one
-- cancelled or moved), and gives each freed slot to its group's first held job while the group
-- is under its limit (the one the last take stored; none stored = no limit): out of gheld, into
-- today's shard due now, admitted. Its runAt becomes now, so it queues behind the jobs already
-- due: groups are served in turn, and a busy group's next job does not jump the others. Today's
-- shard must have been passed (checked by the caller before its first write). Returns how many
-- jobs were released.
local function group_release(admitted, now, channel)
  if #admitted == 0 then return 0 end
  -- Batched: a carried ack or the acker's flush ends many admissions at once, mostly of a few
  -- groups: one write per group, one per structure for the jobs released.
  local ending, order, gone = {}, {}, {}
  for _, a in ipairs(admitted) do
    local g = a[2]
    gone[#gone + 1] = a[1]
    if not ending[g] then
      ending[g] = 0
      order[#order + 1] = g
    end
    ending[g] = ending[g] + 1
  end
  variadic('HDEL', K_GADMIT, gone)
  return group_fill(order, ending, now, channel)
end

-- Puts a dead job back to scheduled, due at now, its attempts and lost attempts reset, in one
-- step: out of dead, into the shard of now (which must have been passed in). What revive.lua does
-- for one job and deadsweep.lua for each it matches. Returns false when the id is not dead, or
-- when another partition claims it (the claims key passed, see K_CLAIMS): a job of a group is
-- on its way there or lives there, and this dead one goes once it does (claimset.lua); revived,
-- the id would be two live jobs.
local function revive_dead(id, now, channel)
  if not rcall('ZSCORE', K_DEAD, id) then return false end
  if K_CLAIMS and rcall('HEXISTS', K_CLAIMS, id) == 1 then return false end
  local r = decode(rcall('HGET', K_JOBS, id))
  r.attempts, r.lost, r.err, r.run_at = 0, 0, '', now
  -- A requeue from the dead set clears the job's expiresAt (it would send it straight back).
  r.expires = nil
  rcall('ZREM', K_DEAD, id)
  rcall('HSET', K_JOBS, id, encode(r))
  schedule(id, now, channel)
  return true
end

-- Deletes a dead job for good, its record and its dead-set entry together (purge.lua for one,
-- deadsweep.lua for each it matches). Returns false when the id is not dead.
local function purge_dead(id)
  if rcall('ZREM', K_DEAD, id) == 0 then return false end
  rcall('HDEL', K_JOBS, id)
  -- A success remembered from before this job was enqueued (by a process without the dedup
  -- window) must not answer for an id that is now free.
  rcall('ZREM', K_DONE, id)
  return true
end

-- Sets "next" exactly after the partition's earliest job may have left (taken, moved later):
-- the smallest runAt of the oldest non-empty shard. The index only lists non-empty shards (every
-- script that empties one drops it), so one look is enough; when that shard was not passed in,
-- the start of its day is a lower bound (a taker then wakes, and learns more). Returns it, -1 when
-- nothing is scheduled.
local function reset_next()
  local first = rcall('ZRANGE', K_DAYS, 0, 0)
  if #first == 0 then
    rcall('DEL', K_NEXT)
    return -1
  end
  local day = tonumber(first[1])
  local shard = shard_of_day[day]
  local top = shard and rcall('ZRANGE', shard, 0, 0, 'WITHSCORES') or {}
  local head = #top > 0 and tonumber(top[2]) or day_start(day)
  rcall('SET', K_NEXT, head)
  return head
end

-- Deletes a scheduled job (its decoded record r; neither in flight nor dead) in one step: out of
-- its shard, or out of gheld when its group holds it back (held), with its record. An admitted one
-- (admitted: admitted_of's pairs for it, else {}) gives its slot to its group's next held job. The
-- shard of its runAt, and today's when admitted, must have been passed (checked by the caller
-- before its first write). What cancel.lua does for one job and bulk.lua for each it matches.
local function cancel_scheduled(id, r, held, admitted, now, channel)
  if held then
    rcall('ZREM', K_GHELD, held_member(r.group, r.run_at, id))
  else
    local day = day_of(r.run_at)
    local shard = shard_of_day[day]
    rcall('ZREM', shard, id)
    if rcall('ZCARD', shard) == 0 then rcall('ZREM', K_DAYS, day) end
  end
  rcall('HDEL', K_JOBS, id)
  -- "next" may now be earlier than the true earliest job: still a valid lower bound, the next
  -- take recomputes it.
  -- A success remembered from before this job was enqueued (by a process without the dedup
  -- window) must not answer for an id that is now free; nor a success kept (forget_kept).
  rcall('ZREM', K_DONE, id)
  forget_kept({ id })
  group_release(admitted, now, channel)
end

-- Moves a scheduled job (as cancel_scheduled) to run_at in one step, from the shard of its old
-- runAt (or gheld) to the one of the new; attempts, lastError, payload and trace stay. A held job
-- moved to a time already due stays held under its new runAt (in a shard, a later job of its group
-- could start before it); an admitted one (admitted: its pair when moved later than now, else {})
-- gives its slot to its group's next held job. The shards of the old and new runAt and today's
-- must have been passed. What reschedule.lua does for one job and bulk.lua for each it matches.
-- Returns the record as stored now.
local function move_scheduled(id, r, held, admitted, run_at, now, channel)
  local old_run_at, old_day = r.run_at, day_of(r.run_at)
  if held then
    rcall('ZREM', K_GHELD, held_member(r.group, r.run_at, id))
  else
    local old_shard = shard_of_day[old_day]
    rcall('ZREM', old_shard, id)
    if rcall('ZCARD', old_shard) == 0 then rcall('ZREM', K_DAYS, old_day) end
  end
  r.run_at = run_at
  local rec = encode(r)
  rcall('HSET', K_JOBS, id, rec)
  if held and run_at <= now then
    rcall('ZADD', K_GHELD, 0, held_member(r.group, run_at, id))
    return rec
  end
  local head = tonumber(rcall('GET', K_NEXT))
  -- Into the new shard (the day index gets its day); an earlier runAt than every other lowers
  -- "next" and wakes the takers.
  schedule(id, run_at, channel)
  -- A job that was at the head and moved later leaves "next" too low: still a valid lower bound,
  -- but takers would wake for nothing, so set it exactly.
  if not held and head and old_run_at <= head and run_at > head then reset_next() end
  group_release(admitted, now, channel)
  return rec
end

-- Whether the partition's topic was forgotten (forget.lua) since it last held a job; the mark goes
-- with the question. Asked only by an enqueue into a partition with nothing scheduled: a forgotten
-- one is empty, so a busy partition pays nothing for it.
local function forgotten_since()
  return rcall('DEL', K_FORGOTTEN) == 1
end

-- Keeps cbnext what it says after a step that changed callbacks: the lowest score there, or absent.
local function cb_next()
  local head = rcall('ZRANGE', K_CALLBACKS, 0, 0, 'WITHSCORES')
  if head[2] then
    rcall('SET', K_CBNEXT, head[2])
  else
    rcall('DEL', K_CBNEXT)
  end
end

-- Dead-set retention (delayq.dead.max-jobs / max-age, see DeadRetention.java), over a sorted set
-- of members scored by time (dead, cbfailed) and the hash holding their data (jobs, cbdata):
-- removes first the members scored at or before now - max_age, then the oldest beyond the keep
-- newest, at most n in all (bounded work: a burial adds one, so a few more than one bring an
-- over-full set back under its cap; the sweep calls again while it removed n), each with its
-- data. keep and max_age 0 = no bound. Returns the members removed.
local function trim_oldest(set, data, keep, max_age, now, n)
  local gone = {}
  if max_age > 0 then
    gone = rcall('ZRANGE', set, '-inf', now - max_age, 'BYSCORE', 'LIMIT', 0, n)
  end
  if keep > 0 and #gone < n then
    local over = rcall('ZCARD', set) - #gone - keep
    if over > 0 then
      -- The lowest ranks after those already taken (they are the lowest scores).
      for _, m in ipairs(rcall('ZRANGE', set, #gone, #gone + math.min(over, n - #gone) - 1)) do
        gone[#gone + 1] = m
      end
    end
  end
  if #gone > 0 then
    rcall('ZREM', set, unpack(gone))
    rcall('HDEL', data, unpack(gone))
  end
  return gone
end

-- The partition's dead jobs past its bounds (trim_oldest), record and dead-set entry together as
-- purge_dead removes them. A dead job's callback (its own copy of the record) is left alone: one
-- already queued is still delivered. Returns the ids removed.
local function trim_dead(keep, max_age, now, n)
  local gone = trim_oldest(K_DEAD, K_JOBS, keep, max_age, now, n)
  -- As purge_dead: a success remembered from before must not answer for an id now free.
  if #gone > 0 then rcall('ZREM', K_DONE, unpack(gone)) end
  return gone
end

-- The same bounds over the failed dead-job callbacks (each keeps a copy of its job's payload).
-- Returns how many went.
local function trim_cbfailed(keep, max_age, now, n)
  return #trim_oldest(K_CBFAILED, K_CBDATA, keep, max_age, now, n)
end

-- Dead jobs a burial may trim at most (see trim_dead).
local BURY_TRIM = 16

-- Moves a job (its record r, already out of inflight and leases) to dead at now. burial is what
-- the caller passes in ARGV for it (StoreLayer.burial): "<callback>,<keep>,<max age ms>", callback
-- '1' when the topic has a dead-url, keep the partition's share of delayq.dead.max-jobs (rounded
-- up), max age delayq.dead.max-age; a bare '1' or '0' is a callback flag without bounds.
-- With callback '1' it records the job's dead-job callback in the same step, due at once: a
-- replica that dies right after this call leaves the callback in Redis for another one. The
-- callback keeps the record as it died, so a requeue, purge or trim of the job meanwhile changes
-- nothing it says; keyed by the time of death ("<diedAt>:<id>", or "<diedAt>.2:<id>", ".3"... when
-- a callback of that key exists), a job that dies again, even within the same Redis millisecond,
-- gets a callback of its own.
-- Then trims the dead set to its bounds (trim_dead) in the same step; returns the ids trimmed.
local function bury(id, r, now, burial)
  local c1 = string.find(burial, ',', 1, true)
  local callback, keep, max_age = burial, 0, 0
  if c1 then
    local c2 = string.find(burial, ',', c1 + 1, true)
    callback = string.sub(burial, 1, c1 - 1)
    keep = tonumber(string.sub(burial, c1 + 1, c2 - 1))
    max_age = tonumber(string.sub(burial, c2 + 1))
  end
  local rec = encode(r)
  rcall('HSET', K_JOBS, id, rec)
  rcall('ZADD', K_DEAD, now, id)
  forget_kept({ id })
  if callback == '1' then
    local ms = string.format('%d', now)
    local member = ms .. ':' .. id
    -- A callback of the same id and millisecond is pending, failed or being sent: another key
    -- (the id stays what follows the first ':', as DeadCallback.parse reads it). Bounded: each
    -- look finds one more death of this id in this one millisecond.
    local seq = 1
    while rcall('HEXISTS', K_CBDATA, member) == 1 do
      seq = seq + 1
      member = ms .. '.' .. seq .. ':' .. id
    end
    rcall('ZADD', K_CALLBACKS, now, member)
    rcall('HSET', K_CBDATA, member, '0,' .. string.format('%d', now) .. ',\n' .. rec)
    cb_next()
  end
  return trim_dead(keep, max_age, now, BURY_TRIM)
end

-- Whether a job (decoded r) with its own expiresAt would be due too late at run_at: after it.
local function expired_by(r, run_at)
  return r.expires ~= nil and run_at > r.expires
end

-- Buries a job (decoded r, already out of its shard, gheld and inflight) whose expiresAt a step
-- would pass (see expired_by): lastError "expired: " + its last error, or the reason given when it
-- has none. As bury; returns the ids trimmed from the dead set.
local function bury_expired(id, r, now, burial, reason)
  r.err = 'expired: ' .. (r.err ~= '' and r.err or reason)
  return bury(id, r, now, burial)
end

-- The state letter of an existing job: s(cheduled), i(nflight) or d(ead).
local function state_of(id)
  if rcall('ZSCORE', K_INFLIGHT, id) then return 'i' end
  if rcall('ZSCORE', K_DEAD, id) then return 'd' end
  return 's'
end

-- A cancel of a job in flight (cancel.lua) appends CANCEL_MARK to its holder's lease token in
-- leases, in the step that finds the job in flight: the mark lives beside the job and goes with its
-- lease, and an ack (which deletes the lease) costs nothing more for it. A token never ends with it
-- (a take's tokens end with the job's index). The holder's scripts take the marked token as theirs;
-- every step that would run the job again or bury it (fail, snooze, reclaim, requeue) removes it
-- instead (drop_cancelled); an ack that comes first is a success (the attempt had returned).
local CANCEL_MARK = '!'

-- Whether a lease token (false = none) carries the cancel mark.
local function marked(token)
  return token and string.sub(token, -1) == CANCEL_MARK
end

-- Whether a job in flight is cancelling: its lease carries the cancel mark.
local function cancelling(id)
  return marked(rcall('HGET', K_LEASES, id))
end

-- Splits n (id, lease token) entries found at ARGV[at..] into the ids whose lease is still the
-- given token (ours) and the others (the lease expired and the job was retaken, or it is gone);
-- and, third, those of ours whose lease carries the cancel mark (they are among ours too).
-- stride: the ARGV entries per job, 2 when omitted (an ack with results passes 3, see ack_leases).
local function by_lease(at, n, stride)
  stride = stride or 2
  local ids = {}
  for i = 1, n do ids[i] = ARGV[at + (i - 1) * stride] end
  local ours, others, cancelled = {}, {}, {}
  for i = 1, n, CHUNK do
    local tokens = rcall('HMGET', K_LEASES, unpack(ids, i, math.min(i + CHUNK - 1, n)))
    for j = 1, #tokens do
      local k = i + j - 1
      local given = ARGV[at + (k - 1) * stride + 1]
      if tokens[j] == given then
        ours[#ours + 1] = ids[k]
      elseif tokens[j] and tokens[j] == given .. CANCEL_MARK then
        ours[#ours + 1] = ids[k]
        cancelled[#cancelled + 1] = ids[k]
      else
        others[#others + 1] = ids[k]
      end
    end
  end
  return ours, others, cancelled
end

-- Expired dedup entries one ack may remove beyond the number it adds: more than it adds, so a
-- backlog of expired entries (after the window was shortened, say) shrinks with every ack, and
-- bounded, so that no call pays for all of it at once. An idle topic's set goes as a whole when
-- its key expires.
local DONE_TRIM = 1000

-- Whether a done entry's time of success (ms, or nil when the id has none) is within the window.
local function remembered(finished, window, now)
  return finished ~= nil and finished ~= false and window > 0 and tonumber(finished) > now - window
end

-- Adds members to the ZSET key, scored now; drops up to #members + DONE_TRIM entries older than
-- keep ms (the oldest, by rank: no scan), and makes the key expire keep ms after this last write,
-- when every entry in it has expired.
local function remember_for(key, members, now, keep)
  local entries = {}
  for _, m in ipairs(members) do
    entries[#entries + 1] = now
    entries[#entries + 1] = m
  end
  variadic('ZADD', key, entries)
  local expired = rcall('ZCOUNT', key, '-inf', now - keep)
  if expired > 0 then rcall('ZREMRANGEBYRANK', key, 0, math.min(expired, #members + DONE_TRIM) - 1) end
  rcall('PEXPIRE', key, keep)
end

-- Remembers ids that succeeded at now in done for window ms (the dedup window; 0 = off, nothing
-- done).
local function remember_done(ids, window, now)
  if window > 0 and #ids > 0 then remember_for(K_DONE, ids, now, window) end
end

-- How long an outbox row's token is remembered once relayed (see remember_relayed).
local RELAY_MS = 86400000

-- Remembers the transactional outbox's row tokens relayed at now (see enqueue.lua) in relayed, for
-- 24 h: a relay that crashed after its enqueue and before it deleted its rows sends them again,
-- and their jobs must not be enqueued again even when they have meanwhile run and been acked.
local function remember_relayed(tokens, now)
  if #tokens > 0 then remember_for(K_RELAYED, tokens, now, RELAY_MS) end
end

-- Result retention (delayq.topics.<t>.result-retention): the scripts that ack (ack, take), and
-- get, list, cancel, fail, reclaim, requeue and forget, get after the day shards (they take no
-- claims: Java refuses a call with both) the partition's (K_SUCCEEDED and K_RESULTS, set above)
--   KEYS[27+k] -> succeeded ZSET job id -> time it succeeded ms, of the succeeded jobs kept
--   KEYS[28+k] -> results   HASH job id -> "<finishedAt ms>,<flag>\n<result JSON>\n<record as it
--                           succeeded>"; flag '-' no result, '=' the result, '!' dropped (larger than
--                           the payload limit: no JSON), '~' an HTTP body kept cut (a JSON string).
--                           The JSON has no line break (Java writes it compact, a raw one blanked)
-- A succeeded job is in neither jobs nor any other set: its id is free (an enqueue of it makes a
-- new job, which GET shows first, and whose success replaces this entry; one that leaves without
-- being kept, by an ack while Redis is full, a cancel, or a death, takes the entry with it: see
-- forget_kept). Both keys expire the retention after their last write: an idle topic's
-- entries all go then, no sweep needed.

-- Succeeded jobs one ack may trim beyond the number it keeps (see trim_oldest): more than it adds,
-- so a set over a lowered cap shrinks with every ack, and bounded.
local RESULT_TRIM = 16
-- Succeeded jobs past the retention one ack may trim beyond the number it keeps: as DONE_TRIM,
-- so that without a cap (delayq.results.max-jobs 0) the age alone bounds the set under a steady
-- stream of acks (which keep re-arming the keys' expiry).
local RESULT_AGE_TRIM = 1000

-- Keeps the acked ids done (their records still in jobs) as succeeded at now, with the result
-- field each was given among the n (id, lease token, field) triples at ARGV[at..] ('' = no
-- result, else the flag and the JSON: see K_RESULTS); then trims the succeeded jobs past max_age
-- ms (the retention) and to keep (the partition's share of delayq.results.max-jobs, 0 = none).
-- adding false (Redis is full: writes that only add are skipped): nothing is kept, and the ids'
-- kept entries of earlier jobs go (forget_kept); the trims still run.
local function keep_results(at, n, done, now, keep, max_age, adding)
  if not adding then
    forget_kept(done)
  else
    local field = {}
    for i = 1, n do
      -- An id twice (a lease its replica settled with the outcome of the attempt that ran, beside
      -- that attempt's own, stale): the entry with a result wins; both carry the same one.
      local id, f = ARGV[at + (i - 1) * 3], ARGV[at + (i - 1) * 3 + 2]
      if f ~= '' or not field[id] then field[id] = f end
    end
    local ms = string.format('%d', now)
    for i = 1, #done, CHUNK do
      local last = math.min(i + CHUNK - 1, #done)
      local recs = rcall('HMGET', K_JOBS, unpack(done, i, last))
      local scored, values = {}, {}
      for j = 1, last - i + 1 do
        -- A lease without a record (its job cannot run: JobRunner drops it) is nothing to keep.
        if recs[j] then
          local id = done[i + j - 1]
          local f = field[id] or ''
          local flag, json = '-', ''
          if f ~= '' then flag, json = string.sub(f, 1, 1), string.sub(f, 2) end
          scored[#scored + 1] = now
          scored[#scored + 1] = id
          values[#values + 1] = id
          values[#values + 1] = ms .. ',' .. flag .. '\n' .. json .. '\n' .. recs[j]
        end
      end
      if #scored > 0 then
        rcall('ZADD', K_SUCCEEDED, unpack(scored))
        rcall('HSET', K_RESULTS, unpack(values))
      end
    end
  end
  trim_oldest(K_SUCCEEDED, K_RESULTS, 0, max_age, now, #done + RESULT_AGE_TRIM)
  trim_oldest(K_SUCCEEDED, K_RESULTS, keep, 0, now, #done + RESULT_TRIM)
  if max_age > 0 and adding then
    rcall('PEXPIRE', K_SUCCEEDED, max_age)
    rcall('PEXPIRE', K_RESULTS, max_age)
  end
end

-- Acks n (id, lease token) pairs found at ARGV[at..]; a negative n is a topic with a result
-- retention, as Java passes it (ResultRetention.addAcks): then ARGV[at] is "<keep>,<max age ms>"
-- (see keep_results), with ",full" after it while Redis is full (nothing is added then), and -n
-- triples (id, lease token, result field) follow. Deletes record, lease
-- and in-flight entry of every job whose lease is still the given token (having kept it as
-- succeeded with a retention), and with a dedup window (ms, 0 = off) remembers them as succeeded
-- at now (Redis ms; read here when not given). Returns the ids whose lease is held by another
-- attempt (theirs expired and the job was retaken): those are left alone; and how many were acked
-- (slots freed).
-- The admitted ones among them give their slots to their groups' next jobs (group_release): that
-- needs today's shard, so without it the call returns nil and the DQNEEDDAY error, before any
-- write; else also how many jobs that released.
local function ack_leases(at, n, window, now, channel)
  local retention, stride = nil, 2
  if n < 0 then
    retention, stride, n, at = ARGV[at], 3, -n, at + 1
  end
  local done, stale = by_lease(at, n, stride)
  local released = 0
  if #done > 0 then
    local admitted = admitted_of(done)
    if #admitted > 0 then
      now = now or now_ms()
      local err = require_days({ day_of(now) })
      if err then return nil, err end
    end
    if stride == 3 then
      now = now or now_ms()
      local keep, max_age, full = string.match(retention, '^(%d+),(%d+),?(%a*)$')
      keep_results(at, n, done, now, tonumber(keep), tonumber(max_age), full ~= 'full')
    end
    variadic('ZREM', K_INFLIGHT, done)
    variadic('HDEL', K_LEASES, done)
    variadic('HDEL', K_JOBS, done)
    if window > 0 then remember_done(done, window, now or now_ms()) end
    released = group_release(admitted, now, channel)
  end
  return stale, #done, released
end

-- Removes a job whose attempt was cancelled (its lease carries the cancel mark): record, in-flight
-- entry and lease, and its dedup entry (a cancelled id is free at once); no retry, no dead entry,
-- no callback. Its group's slot goes to the group's next held job: admitted is what admitted_of
-- read for it, and today's shard must have been passed when that is not empty.
local function drop_cancelled(id, admitted, now, channel)
  rcall('ZREM', K_INFLIGHT, id)
  rcall('HDEL', K_LEASES, id)
  rcall('HDEL', K_JOBS, id)
  rcall('ZREM', K_DONE, id)
  forget_kept({ id })
  group_release(admitted, now, channel)
  free_slots(channel)
end

-- Redis now and the admission of one job (admitted_of), having checked that today's shard was
-- passed when it has one (its group's next held job goes there): now, admitted; or nil, nil and
-- the DQNEEDDAY error, before any write.
local function admitted_now(id)
  local now = now_ms()
  local admitted = admitted_of({ id })
  if #admitted > 0 then
    local err = require_days({ day_of(now) })
    if err then return nil, nil, err end
  end
  return now, admitted
end

-- The start of a holder's outcome script (fail, snooze): nil when the job's lease is still the
-- given token (the script goes on); else {'stale'} (the lease is another attempt's, or gone:
-- nothing changed), or, when the lease is that token with the cancel mark, the job removed
-- (drop_cancelled) and {'cancelled'}; or DQNEEDDAY for today's shard, before any write.
local function unless_holder(id, token, channel)
  local holder = rcall('HGET', K_LEASES, id)
  if holder == token then return nil end
  if not holder or holder ~= token .. CANCEL_MARK then return { 'stale' } end
  local now, admitted, need = admitted_now(id)
  if need then return need end
  drop_cancelled(id, admitted, now, channel)
  return { 'cancelled' }
end
