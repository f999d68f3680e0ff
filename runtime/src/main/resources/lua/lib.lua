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
--   KEYS[27] -> ldays    ZSET   the non-empty lane shards (priorities 1, 2, 4 and 5), member and
--                               score their code: lane * 100000000 + yyyymmdd (see "Lanes" below).
--                               Apart from days, so that a release before priorities never meets one
--   KEYS[28] -> lnext    STRING a lower bound of every runAt in the lane shards (absent = none).
--                               Apart from next, which keeps its meaning (priority 3 only): a release
--                               before priorities resets next from days alone
--   KEYS[29..28+k] -> day shards ZSET job id -> runAt ms, one per UTC day and lane, for the days
--                               and lane codes in ARGV[2..1+k]
-- ARGV[1] = k, the number of day shards passed; ARGV[2..1+k] = their days (yyyymmdd), or lane codes.
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
local K_LDAYS, K_LNEXT = KEYS[27], KEYS[28]
local DAY_MS = 86400000
-- Lua's unpack() is bounded by the C stack (LUAI_MAXCSTACK 8000): variadic calls go in chunks.
local CHUNK = 1000

local shard_count = tonumber(ARGV[1])
local shard_of_day = {}
for i = 1, shard_count do shard_of_day[tonumber(ARGV[1 + i])] = KEYS[28 + i] end
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
local K_CLAIMS = KEYS[29 + shard_count]
-- With a result retention, the scripts that move a job out of flight get instead the partition's
-- succeeded ZSET and results HASH (see keep_results below; absent = nil). A script given the claims
-- key has no results key: K_RESULTS is nil there, and forget_kept does nothing.
local K_SUCCEEDED, K_RESULTS = KEYS[29 + shard_count], KEYS[30 + shard_count]

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

-- Record: "[<priority>]<runAt base36>[,<attempts>,<maxAttempts>[,<lastError>]]\n<payload json>"
-- (the priority prefix: see PRIORITY_PREFIX below); decoded as
-- { run_at, attempts, max, err, trace, lost, retry, group, timeout, expires, priority, payload }.
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
-- A job's priority (the enqueue's "priority", 1 first .. 5 last) other than 3 is a prefix of the
-- runAt: "00" for 1, "0" for 2, "+" for 4, "+0" for 5 (as many bytes as the priority is from 3;
-- '0' first for the earlier ones, '+' for the later). Absent = 3, the default: a job of priority
-- 3 costs no byte for it, and every record written before priorities reads as priority 3 with
-- no migration. The runAt reads the same with it: tonumber(text, 36) and Java's
-- Long.parseLong(text, 36), which every release parses it with, take a leading '+' and leading
-- zeros (b36 never writes a leading zero but for the runAt 0 itself, which the rule below tells
-- apart: the prefix never takes the runAt's last digit). So a release that predates it reads the
-- job as priority 3, and drops the prefix when it rewrites the record (every rewrite: it writes
-- the runAt anew), never a malformed record. Its cost: at most 2 bytes and no ',0,0,' of empty
-- attempt fields with it, so a small record mostly stays in its allocator size class (a 16-byte
-- payload's record is 29 bytes as a Redis string at priority 3, 31 with a prefix of 2 against 37
-- with the mark below: jemalloc's 32-byte class, against its 48).
-- Records written before the prefix carry the priority after the job's limits instead: "\26"
-- (SUB) + the digit + "\26" + the error; still read (a prefix wins), written no more. A mark that
-- is not one digit 1..5 is left in the error text (the same rule as the other marks: never a
-- malformed record). Decoded as r.priority (a number, 3 when neither).
local PRIORITY_MARK, DEFAULT_PRIORITY = '\26', 3
local PRIORITY_PREFIX = { [1] = '00', [2] = '0', [4] = '+', [5] = '+0' }

-- The priority a record's (or head's) prefix gives and the prefix's length, nil when it has none;
-- e = where its runAt's text ends (the first ',' or newline, or past the end of a head).
local function prefix_of(rec, e)
  local a, b = string.byte(rec, 1, 2)
  if a ~= 43 and a ~= 48 then return nil end -- neither '+' nor '0'
  local len = e - 1
  if a == 48 and len == 1 then return nil end -- the runAt 0
  local two = b == 48 and len > 2
  if a == 43 then return two and 5 or 4, two and 2 or 1 end
  return two and 1 or 2, two and 2 or 1
end

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
  local prefixed = prefix_of(head, c1 or #head + 1)
  if prefixed then r.priority = prefixed end
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
    if string.sub(r.err, 1, 1) == PRIORITY_MARK and string.sub(r.err, 3, 3) == PRIORITY_MARK then
      local n = tonumber(string.sub(r.err, 2, 2))
      if n and n >= 1 and n <= 5 then
        r.priority = prefixed or n
        r.err = string.sub(r.err, 4)
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
    err = '', trace = '', lost = 0, retry = '', group = '', timeout = '', priority = DEFAULT_PRIORITY })
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

-- A record's priority (3 without a prefix or the mark), read as decode reads it, without copying
-- its payload.
local function priority_of(rec)
  local prefixed = prefix_of(rec, string.find(rec, '[,\n]'))
  if prefixed then return prefixed end
  local nl = string.find(rec, '\n', 1, true)
  local head = string.sub(rec, 1, nl - 1)
  if not string.find(head, PRIORITY_MARK, 1, true) then return DEFAULT_PRIORITY end
  return decode_head(head, { attempts = 0, max = 0, err = '', trace = '', lost = 0, retry = '', group = '',
    priority = DEFAULT_PRIORITY }).priority
end

local function encode(r)
  local head = b36(r.run_at)
  local prefix = r.priority and PRIORITY_PREFIX[r.priority]
  if prefix then head = prefix .. head end
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

-- A record with its runAt replaced as text (the runAt leads it, after its priority prefix, up to
-- its first ',' or newline), without decoding the rest, the payload included.
local function with_run_at(rec, run_at)
  local e = string.find(rec, '[,\n]')
  local _, len = prefix_of(rec, e)
  return (len and string.sub(rec, 1, len) or '') .. b36(run_at) .. string.sub(rec, e)
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
-- One DEL (of an absent key, for a partition never capped): no publish, no other write. The head
-- is the earlier of next and lnext: a partition may hold only lane jobs.
local function free_slots(channel)
  if rcall('DEL', K_CAPPED) == 1 then
    local heads = rcall('MGET', K_NEXT, K_LNEXT)
    local head = tonumber(heads[1])
    local lhead = tonumber(heads[2])
    if lhead and (not head or lhead < head) then head = lhead end
    if head then wake(channel, string.format('%d', head)) end
  end
end

-- Lanes: the due jobs of priority 1, 2, 4 and 5 live in shards of their own, one per (lane, day),
-- known to the scripts (shard_of_day, ARGV) by the code lane * LANE + yyyymmdd; priority 3 lives in
-- the plain day shards (days, next), exactly where every job lived before priorities, so a job of an
-- older release is priority 3 with no migration and such a release takes only priority 3 jobs.
-- A lane's days are listed in ldays, and lnext bounds their runAts from below.
local LANE = 100000000

-- The shard code of a priority's day: the day itself for priority 3.
local function code_of(priority, day)
  if not priority or priority == 3 then return day end
  return priority * LANE + day
end

-- The shard codes where a scheduled job (decoded r) may be: its lane's day, and, for a lane job,
-- the plain day too (a release before priorities keeps the mark through a snooze, a reclaim or a
-- requeue but puts the job into the plain shard).
local function codes_of(r)
  local day = day_of(r.run_at)
  if r.priority == 3 then return { day } end
  return { code_of(r.priority, day), day }
end

-- A record's runAt, read from its first field without decoding the rest (a priority prefix reads
-- as leading digits: '0', or '+' as a sign).
local function run_at_of(rec)
  return tonumber(string.sub(rec, 1, string.find(rec, '[,\n]') - 1), 36)
end
-- Takes a lane job's plain twin (see twins_of) at run_at (its record's runAt) out of the plain
-- shard, when that shard was passed, and the day out of its index when that emptied it (not for a
-- caller that may yet add to that shard in the same call: it checks the day at its end). True when
-- there was one. For a lane job leaving gheld (started, put off, buried, moved or cancelled), as
-- unshard does for one leaving its lane's shard.
local function drop_plain_twin(id, run_at, keep_day)
  local day = day_of(run_at)
  local plain = shard_of_day[day]
  if not plain or rcall('ZREM', plain, id) == 0 then return false end
  if not keep_day and rcall('ZCARD', plain) == 0 then rcall('ZREM', K_DAYS, day) end
  return true
end

-- Takes a scheduled job (decoded r, not held) out of its shard, and the shard's code out of its
-- index when that emptied it; a lane job out of the plain shard too (see codes_of): it may be in
-- both (a twin, see twins_of), and a twin left behind would lease the job at its old runAt. The
-- shards must have been passed.
local function unshard(id, r)
  local day = day_of(r.run_at)
  local shard = shard_of_day[day]
  if r.priority ~= 3 then
    local code = code_of(r.priority, day)
    local lane = shard_of_day[code]
    if rcall('ZREM', lane, id) == 1 and rcall('ZCARD', lane) == 0 then rcall('ZREM', K_LDAYS, code) end
  end
  if rcall('ZREM', shard, id) == 1 and rcall('ZCARD', shard) == 0 then rcall('ZREM', K_DAYS, day) end
end

-- Sets lnext exactly (see reset_next): the smallest runAt over the oldest non-empty day of every
-- lane. Returns it, -1 when no lane holds a job.
local function reset_lnext()
  local best = nil
  for _, lane in ipairs({ 1, 2, 4, 5 }) do
    local first = rcall('ZRANGE', K_LDAYS, lane * LANE, (lane + 1) * LANE - 1, 'BYSCORE', 'LIMIT', 0, 1)
    if #first > 0 then
      local code = tonumber(first[1])
      local shard = shard_of_day[code]
      local top = shard and rcall('ZRANGE', shard, 0, 0, 'WITHSCORES') or {}
      local head = #top > 0 and tonumber(top[2]) or day_start(code % LANE)
      if not best or head < best then best = head end
    end
  end
  if best then rcall('SET', K_LNEXT, best) else rcall('DEL', K_LNEXT) end
  return best or -1
end

-- Puts one job into the shard of its runAt and priority (3 when nil; the shard must have been
-- passed in) and keeps "next" (lnext for a lane) a lower bound of every runAt; wakes sleeping
-- takers when the job became the earliest.
local function schedule(id, run_at, channel, priority)
  local day = day_of(run_at)
  local code, index, bound = day, K_DAYS, K_NEXT
  -- A lane shard not at hand (a step that frees group slots releases held jobs of any lane; a dead
  -- sweep revives many): the plain shard, where every script looks for a lane job too (codes_of).
  if priority and priority ~= 3 and shard_of_day[code_of(priority, day)] then
    code, index, bound = code_of(priority, day), K_LDAYS, K_LNEXT
  end
  rcall('ZADD', shard_of_day[code], run_at, id)
  rcall('ZADD', index, code, code)
  local head = tonumber(rcall('GET', bound))
  if not head or run_at < head then
    rcall('SET', bound, run_at)
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
-- are one lexical range of it, in (priority, runAt) order: "<group>\0<13 chars>\0<id>", the 13
-- chars being the runAt's 13 digits for priority 3 (the member of a release before priorities),
-- else a lane char and the runAt's 12 leading digits (10 ms steps: the order within a lane; the
-- member is made from the record, so it is found again exactly). The lane chars sort below '0'
-- for 1 and 2 ('+', '-') and above a runAt's leading digit for 4 and 5 ('8', '9': runAts start
-- with '1' or '2' for centuries). A release before priorities reads such a member with its own
-- split: the id where it expects it, and a number (tonumber takes a sign): lanes 1 and 2 read as
-- due, lanes 4 and 5 as far off; never a malformed member.
local HELD_LANE_CHAR = { [1] = '+', [2] = '-', [4] = '8', [5] = '9' }
local HELD_CHAR_LANE = { ['+'] = 1, ['-'] = 2, ['8'] = 4, ['9'] = 5 }

-- A job's member in gheld (see above).
local function held_member(group, run_at, id, priority)
  local c = priority and HELD_LANE_CHAR[priority]
  if c then return group .. '\0' .. c .. string.format('%012d', floor(run_at / 10)) .. '\0' .. id end
  return group .. '\0' .. string.format('%013d', run_at) .. '\0' .. id
end

-- A member's group, runAt (for a lane: to 10 ms below), id and priority.
local function held_split(m)
  local z = string.find(m, '\0', 1, true)
  local c = string.sub(m, z + 1, z + 1)
  local lane = HELD_CHAR_LANE[c]
  if lane then
    return string.sub(m, 1, z - 1), tonumber(string.sub(m, z + 2, z + 13)) * 10, string.sub(m, z + 15), lane
  end
  return string.sub(m, 1, z - 1), tonumber(string.sub(m, z + 1, z + 13)), string.sub(m, z + 15), 3
end

-- Whether a lane member of gheld (its runAt to 10 ms, its lane) is stale: its record's runAt (rec) is
-- another, or its priority. A release before priorities builds a priority-3 member to find a held
-- job, so its reschedule, extend or replace of a held lane job does not find the member: it rewrites
-- the record (without the priority prefix: see encode) and puts the job into the plain shard, at the
-- same runAt too. The plain entry is then the job; a release that meets the member drops it (never
-- a second run; released into its lane, the record's priority 3 would make the take drop it there,
-- and its plain entry went with the release: a lost job). A priority-3 member is found by every
-- release: never stale, unless its record carries a priority: then a release before priorities
-- made it when its take held the job's plain twin (see twins_of), and it is stale once the
-- record's runAt is another.
local function stale_held(rec, run_at, lane)
  local at = run_at_of(rec)
  if lane == 3 then return at ~= run_at and priority_of(rec) ~= 3 end
  return floor(at / 10) * 10 ~= run_at or priority_of(rec) ~= lane
end

-- The first n members of a group's held jobs, in runAt order.
local function held_of(group, n)
  return rcall('ZRANGEBYLEX', K_GHELD, '[' .. group .. '\0', '(' .. group .. '\1', 'LIMIT', 0, n)
end

-- Whether a scheduled job (its record r) is held back by its group: in gheld, in no day shard.
local function is_held(id, r)
  return r.group ~= '' and rcall('ZSCORE', K_GHELD, held_member(r.group, r.run_at, id, r.priority)) ~= false
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

-- Twins: a release before priorities moves a lane job by its plain shard only, so its reschedule,
-- extend or replace of a lane job (or of a held one) to the runAt the job had leaves two entries of
-- one job: the lane entry (or gheld member) and a plain one, each matching the record. Its take then
-- leases, holds or buries the plain twin as the job, and leaves the other behind. So a gheld member,
-- or a lane entry, whose id is already admitted, in flight or dead is a twin the job has left: never
-- started again (a second run, or a group slot counted twice for one admission). None is left so
-- with only this release running: these reads find nothing then. The plain twin of a gheld member
-- goes with it when this release starts, releases, moves or cancels the member (drop_plain_twin,
-- when the plain shard of its runAt is at hand: a release of a held job whose twin is older than
-- yesterday leaves it, for a plain round to drop once the job is busy). Of ids[i..j] (recs[k] the
-- record of ids[i + k - 1]), three reads of those whose record carries a priority: a twin's record does
-- (as a SUB mark written before the prefix: that release rewrites a record without its priority
-- prefix, and its move then leaves a member or a lane entry that stale_held or the take's lane
-- check drops), so a topic without priorities reads nothing. A record this release rewrote (with
-- the prefix) still reads so: its member may have lost its twin to that release's take first.
local function twins_of(ids, i, j, recs)
  local out, pick, some = {}, {}, {}
  for k = 1, j - i + 1 do
    out[k] = false
    if recs[k] and priority_of(recs[k]) ~= DEFAULT_PRIORITY then
      pick[#pick + 1] = k
      some[#some + 1] = ids[i + k - 1]
    end
  end
  if #some == 0 then return out end
  local admitted = rcall('HMGET', K_GADMIT, unpack(some))
  local inflight = rcall('ZMSCORE', K_INFLIGHT, unpack(some))
  local dead = rcall('ZMSCORE', K_DEAD, unpack(some))
  for n, k in ipairs(pick) do out[k] = (admitted[n] or inflight[n] or dead[n]) and true or false end
  return out
end

-- Groups whose fill (below) stopped at its bound with slots left unfilled: their next live held job
-- lies behind more than CHUNK members it dropped (stale ones: an older release's bulk reschedule
-- or cancel of a group's held lane jobs leaves one per job; or twins). Their count no longer has
-- those slots, and nothing else would release their held jobs (none in a shard for a take to meet):
-- they are listed in the groups hash under this field (no group is named with a NUL), joined by
-- NUL, "next" made due and the takers woken; the next take of the topic fills them on from where
-- the fill stopped (and lists them again if it stops at the bound again: CHUNK members dropped a
-- call). A release before it never reads the field.
local GROUP_REFILL = '\0'

-- The release itself (group_release; take.lua when the limit was raised, or for GROUP_REFILL):
-- each group of order, its count less ending[g] (jobs leaving their admissions, 0 = none), takes
-- its first held jobs up to the stored limit. Returns how many jobs were released, and whether it
-- listed groups under GROUP_REFILL.
local function group_fill(order, ending, now, channel)
  local limit = tonumber(rcall('HGET', K_GROUPS, ''))
  local ids, groups_of, lanes_of, runs_of = {}, {}, {}, {}
  local records, admit, due, missing, released = {}, {}, {}, {}, {}
  local today = day_of(now)
  -- Into today's shard of its lane (the plain one when that was not passed, see schedule), due
  -- now, admitted; a priority-3 member's lane is its record's priority (one a release before
  -- priorities held where this release had put a lane job when its lane was not at hand). A lane
  -- job's plain twin (see twins_of) goes, when its shard was passed: its record is due now from
  -- here on, and the twin would match it. One ZREM per lane job released.
  local function release(id, rec, g, lane)
    released[id] = true
    if lane ~= 3 then drop_plain_twin(id, run_at_of(rec)) end
    records[#records + 1] = id
    records[#records + 1] = with_run_at(rec, now)
    admit[#admit + 1] = id
    admit[#admit + 1] = g
    local code = code_of(lane == 3 and priority_of(rec) or lane, today)
    if not shard_of_day[code] then code = today end
    local list = due[code]
    if not list then
      list = {}
      due[code] = list
    end
    list[#list + 1] = now
    list[#list + 1] = id
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
            local _, run, id, lane = held_split(m)
            ids[#ids + 1] = id
            groups_of[#ids] = g
            lanes_of[#ids] = lane
            runs_of[#ids] = run
          end
          c = c + #members
        end
      end
      if c > 0 then rcall('HSET', K_GROUPS, g, c) else rcall('HDEL', K_GROUPS, g) end
    end
  end
  if #ids == 0 then return 0 end
  -- A member to release: its record there, not stale, not a twin (see twins_of; two twins of one
  -- job may both be among the first members of its group).
  local function live(id, rec, run, lane, twin)
    return rec and not twin and not released[id] and not stale_held(rec, run, lane)
  end
  for i = 1, #ids, CHUNK do
    local last = math.min(i + CHUNK - 1, #ids)
    local recs = rcall('HMGET', K_JOBS, unpack(ids, i, last))
    local twins = twins_of(ids, i, last, recs)
    for j = 1, #recs do
      local k = i + j - 1
      if live(ids[k], recs[j], runs_of[k], lanes_of[k], twins[j]) then
        release(ids[k], recs[j], groups_of[k], lanes_of[k])
      else
        -- a member without a record, a stale one or a twin: its slot was counted
        missing[#missing + 1] = groups_of[k]
      end
    end
  end
  -- A member without a record (none is left so by the scripts; a record written before groups
  -- could have been misread as grouped), or a stale one, gave its slot back: the group's next held
  -- job takes it. Its members are read in windows that double (n, 2n, 4n ...: a few reads however
  -- many it drops), looked at in order, and only those looked at leave gheld; at most CHUNK of them
  -- per call, over all its groups (stale ones feed the loop): a group left below its limit so is
  -- listed under GROUP_REFILL.
  local retry, refill, looked = {}, {}, 0
  for _, g in ipairs(missing) do retry[g] = (retry[g] or 0) + 1 end
  for g, n in pairs(retry) do
    local got, window = 0, n
    while n > 0 and looked < CHUNK do
      local members = held_of(g, math.min(window, CHUNK - looked))
      if #members == 0 then break end
      local mids, mruns, mlanes = {}, {}, {}
      for k, m in ipairs(members) do
        local _
        _, mruns[k], mids[k], mlanes[k] = held_split(m)
      end
      local recs = rcall('HMGET', K_JOBS, unpack(mids))
      local twins = twins_of(mids, 1, #mids, recs)
      local used = 0
      for k, id in ipairs(mids) do
        if n == 0 then break end
        used = k
        if live(id, recs[k], mruns[k], mlanes[k], twins[k]) then
          release(id, recs[k], g, mlanes[k])
          n, got = n - 1, got + 1
        end
      end
      rcall('ZREM', K_GHELD, unpack(members, 1, used))
      looked, window = looked + used, window * 2
    end
    -- The count had the missing ones: the ones found instead stay counted.
    if rcall('HINCRBY', K_GROUPS, g, got - retry[g]) <= 0 then rcall('HDEL', K_GROUPS, g) end
    if n > 0 and looked >= CHUNK then refill[#refill + 1] = g end
  end
  if #refill > 0 then
    local listed = rcall('HGET', K_GROUPS, GROUP_REFILL)
    local list = listed and { listed } or {}
    for _, g in ipairs(refill) do
      if not listed or not string.find('\0' .. listed .. '\0', '\0' .. g .. '\0', 1, true) then list[#list + 1] = g end
    end
    rcall('HSET', K_GROUPS, GROUP_REFILL, table.concat(list, '\0'))
    local head = tonumber(rcall('GET', K_NEXT))
    if not head or now < head then rcall('SET', K_NEXT, now) end
    wake(channel, now)
  end
  if #admit == 0 then return 0, #refill > 0 end
  variadic('HSET', K_JOBS, records)
  variadic('HSET', K_GADMIT, admit)
  for code, list in pairs(due) do
    variadic('ZADD', shard_of_day[code], list)
    local lane = code >= LANE
    rcall('ZADD', lane and K_LDAYS or K_DAYS, code, code)
    local head_key = lane and K_LNEXT or K_NEXT
    local head = tonumber(rcall('GET', head_key))
    if not head or now < head then
      rcall('SET', head_key, now)
      wake(channel, now)
    end
  end
  return #admit / 2, #refill > 0
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
  schedule(id, now, channel, r.priority)
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
    rcall('ZREM', K_GHELD, held_member(r.group, r.run_at, id, r.priority))
    if r.priority ~= 3 then drop_plain_twin(id, r.run_at) end
  else
    unshard(id, r)
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
  local old_run_at = r.run_at
  if held then
    rcall('ZREM', K_GHELD, held_member(r.group, r.run_at, id, r.priority))
    if r.priority ~= 3 then drop_plain_twin(id, r.run_at) end
  else
    unshard(id, r)
  end
  r.run_at = run_at
  local rec = encode(r)
  rcall('HSET', K_JOBS, id, rec)
  if held and run_at <= now then
    rcall('ZADD', K_GHELD, 0, held_member(r.group, run_at, id, r.priority))
    return rec
  end
  local lane = r.priority ~= 3
  local head = tonumber(rcall('GET', lane and K_LNEXT or K_NEXT))
  -- Into the new shard (the day index gets its day); an earlier runAt than every other lowers
  -- "next" (lnext) and wakes the takers.
  schedule(id, run_at, channel, r.priority)
  -- A job that was at the head and moved later leaves "next" too low: still a valid lower bound,
  -- but takers would wake for nothing, so set it exactly.
  if not held and head and old_run_at <= head and run_at > head then
    if lane then reset_lnext() else reset_next() end
  end
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
--   KEYS[29+k] -> succeeded ZSET job id -> time it succeeded ms, of the succeeded jobs kept
--   KEYS[30+k] -> results   HASH job id -> "<finishedAt ms>,<flag>\n<result JSON>\n<record as it
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
