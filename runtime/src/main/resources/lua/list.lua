-- list.lua: one page of a partition's jobs in one state, after a position, for
-- GET /topics/{t}/jobs (JobListing.java merges the partitions' pages and keeps the positions in
-- the cursor). Reads only.
-- KEYS: see lib.lua; the day shards of the days the days set lists from the position on (at most
-- MAX_DAYS of them per call and phase: the plain days, then each lane's, see lib.lua; one not passed in: DQNEEDDAY before anything is read of it)
-- ARGV[A]    = state: 's' scheduled, 'i' in flight, 'd' dead, 'r' succeeded and kept (result
--              retention: KEYS succeeded and results follow the day shards, see lib.lua's
--              keep_results)
-- ARGV[A+1]  = the most jobs to return (limit)
-- ARGV[A+2]  = the most entries to examine (matching or not): what bounds the call
-- ARGV[A+3]  = id prefix ('' = any), ARGV[A+4] = group ('' = any)
-- ARGV[A+5]  = runAt from, ms ('' = no bound), ARGV[A+6] = runAt to, ms, inclusive ('' = none)
-- ARGV[A+7]  = '1': records with their payloads; else only their heads (up to the newline)
-- ARGV[A+8..A+10] = the position: the last entry the previous call examined, as this script
--   returned it (phase, score, member), or ('', '', '') to start. The orders:
--   's': first the jobs held back by their groups (phase 'h'; gheld's lexical order: group,
--        priority, runAt, id), then the day shards (phase 'd') in (runAt, id) order, then the
--        lanes' shards (phases 'l1', 'l2', 'l4', 'l5', lib.lua's lanes) each in (runAt, id) order;
--        from/to bound runAt
--   'i': by id (phase ''; leases move with every heartbeat, ids do not). The whole in-flight set is
--        read and sorted: it holds at most what the replicas run at once
--   'd': newest first, (time of death, id) descending
--   'r': newest first, (time it succeeded, id) descending; only those after ARGV[A+11] (ms: what
--        the retention keeps, as get.lua reads it)
--   Scores compare as numbers, ids and members byte by byte (never Lua's '<', which follows the
--   server's locale: Redis sets LC_COLLATE from the environment).
-- Returns {exhausted: 1 when nothing is left after the last entry examined, else 0,
--   phase, score, member of the last entry examined (the next call's position),
--   then per job found: id, score (runAt for 's', lease deadline for 'i', time of death for 'd',
--   time it succeeded for 'r'; '' for a held job), a mark (for 's' its gheld member when held, its
--   phase for a lane's job ('l1', 'l2', 'l4', 'l5': a gheld member always holds a NUL byte), else
--   ''; for 'i' 'x' when its cancel was asked, as get.lua's state letter says, else ''; for 'r'
--   its result's flag, then with full its JSON, see keep_results), its record}.
local MAX_DAYS = 8
local mode, limit, budget = ARGV[A], tonumber(ARGV[A + 1]), tonumber(ARGV[A + 2])
local prefix, group = ARGV[A + 3], ARGV[A + 4]
local from = ARGV[A + 5] ~= '' and tonumber(ARGV[A + 5]) or nil
local to = ARGV[A + 6] ~= '' and tonumber(ARGV[A + 6]) or nil
local full = ARGV[A + 7] == '1'
local last_phase, last_score, last_member = ARGV[A + 8], ARGV[A + 9], ARGV[A + 10]
local out = { 0, '', '', '' }
local found, examined = 0, 0

-- Whether a < b comparing bytes (ids and members are ASCII; gheld members hold NUL bytes).
local function before(a, b)
  if a == b then return false end
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

local function head_run_at(rec)
  return tonumber(string.match(rec, '^[^,\n]+'), 36)
end

local function in_range(run_at)
  return (not from or run_at >= from) and (not to or run_at <= to)
end

local function has_prefix(id)
  return prefix == '' or string.sub(id, 1, #prefix) == prefix
end

-- Adds a job that matches; true when the page is full.
local function add(id, score, member, rec)
  if not full then rec = string.sub(rec, 1, string.find(rec, '\n', 1, true)) end
  out[#out + 1] = id
  out[#out + 1] = score
  out[#out + 1] = member
  out[#out + 1] = rec
  found = found + 1
  return found >= limit
end

-- Whether a job examined by a group-blind order (a shard, in flight, dead) matches, with its record
-- (rec: already read, for a succeeded job).
local function check(id, run_at, rec)
  if not has_prefix(id) then return nil end
  rec = rec or rcall('HGET', K_JOBS, id)
  if not rec then return nil end
  if group ~= '' and group_of(rec) ~= group then return nil end
  if not in_range(run_at or head_run_at(rec)) then return nil end
  return rec
end

local function finish(exhausted)
  out[1], out[2], out[3], out[4] = exhausted and 1 or 0, last_phase, last_score, last_member
  return out
end

-- The index in ascending order of the first entry of sorted set z after (s, m) ((score, member)
-- order; m '' = every entry of score s comes after): two ZCOUNTs and a binary search among the
-- entries of score s, which are in member order. O(log n) reads however many share a score.
local function first_after(z, s, m)
  local lo = rcall('ZCOUNT', z, '-inf', '(' .. s)
  if m == '' then return lo end
  local hi = rcall('ZCOUNT', z, '-inf', s)
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    if before(m, rcall('ZRANGE', z, mid, mid)[1]) then hi = mid else lo = mid + 1 end
  end
  return lo
end

if mode == 'i' then
  -- Bounded by what runs at once, not by the call: see the header.
  local all = rcall('ZRANGE', K_INFLIGHT, 0, -1, 'WITHSCORES')
  local ids, lease = {}, {}
  for i = 1, #all, 2 do
    local id = all[i]
    if has_prefix(id) and (last_member == '' or before(last_member, id)) then
      ids[#ids + 1] = id
      lease[id] = all[i + 1]
    end
  end
  table.sort(ids, before)
  for _, id in ipairs(ids) do
    if examined >= budget then return finish(false) end
    examined = examined + 1
    last_phase, last_score, last_member = '', '', id
    local rec = check(id)
    if rec and add(id, lease[id], cancelling(id) and 'x' or '', rec) then return finish(examined == #ids) end
  end
  return finish(true)
end

-- Dead ('d') and kept succeeded ('r') jobs, newest first: set scored by time; a succeeded job's
-- record and result are in its results entry. An 'r' walk ends at the first entry at or before
-- oldest (the retention's bound: the rest are older still).
local function newest_first(set, oldest)
  local n = rcall('ZCARD', set)
  -- Entries after the position, newest first, are the ascending indices below j.
  local j = n
  if last_score ~= '' then
    local lo, hi = rcall('ZCOUNT', set, '-inf', '(' .. last_score), rcall('ZCOUNT', set, '-inf', last_score)
    while lo < hi do
      local mid = floor((lo + hi) / 2)
      if before(rcall('ZRANGE', set, mid, mid)[1], last_member) then lo = mid + 1 else hi = mid end
    end
    j = lo
  end
  if j == 0 then return finish(true) end
  local got = rcall('ZREVRANGE', set, n - j, n - j + budget - 1, 'WITHSCORES')
  for i = 1, #got, 2 do
    local id, at = got[i], got[i + 1]
    if oldest and tonumber(at) <= oldest then return finish(true) end
    examined = examined + 1
    last_phase, last_score, last_member = '', at, id
    local rec, mark = nil, ''
    if oldest then
      -- The id's prefix first: an entry holds a record and a result of up to the payload limit
      -- each, not to be read for an id that cannot match.
      local entry = has_prefix(id) and rcall('HGET', K_RESULTS, id)
      if entry then
        local nl1 = string.find(entry, '\n', 1, true)
        local nl2 = string.find(entry, '\n', nl1 + 1, true)
        local comma = string.find(entry, ',', 1, true)
        -- The result only with the payloads (full): a page of 1000 would move 1000 results else.
        mark = string.sub(entry, comma + 1, comma + 1) .. (full and string.sub(entry, nl1 + 1, nl2 - 1) or '')
        rec = check(id, nil, string.sub(entry, nl2 + 1))
      end
    else
      rec = check(id)
    end
    if rec and add(id, at, mark, rec) then return finish(examined == j) end
  end
  return finish(#got / 2 < budget or examined == j)
end

if mode == 'd' then return newest_first(K_DEAD, nil) end
if mode == 'r' then return newest_first(K_SUCCEEDED, tonumber(ARGV[A + 11])) end

-- Scheduled: the held jobs first (a group's are one lexical range of gheld).
if last_phase == '' or last_phase == 'h' then
  local min, max = '-', '+'
  if group ~= '' then min, max = '[' .. group .. '\0', '(' .. group .. '\1' end
  if last_member ~= '' then min = '(' .. last_member end
  local held = rcall('ZRANGEBYLEX', K_GHELD, min, max, 'LIMIT', 0, budget)
  for _, m in ipairs(held) do
    examined = examined + 1
    last_phase, last_score, last_member = 'h', '', m
    local _, run_at, id = held_split(m)
    if has_prefix(id) and in_range(run_at) then
      local rec = rcall('HGET', K_JOBS, id)
      if rec and add(id, '', m, rec) then return finish(false) end
    end
  end
  if #held == budget then return finish(false) end
  -- On to the day shards, from the start of the range.
  last_phase, last_score, last_member = 'd', '', ''
end

-- The plain days (phase 'd'), then the lanes in priority order (phases 'l1', 'l2', 'l4', 'l5', see
-- lib.lua's lanes), each day shard in (runAt, id) order. The days of every phase still to walk are
-- read first and named at once (one DQNEEDDAY for all of them, before anything is read of a shard).
local PHASES = { { 'd', K_DAYS, 3 }, { 'l1', K_LDAYS, 1 }, { 'l2', K_LDAYS, 2 }, { 'l4', K_LDAYS, 4 }, { 'l5', K_LDAYS, 5 } }
local walk, all = {}, {}
local started = false
for _, ph in ipairs(PHASES) do
  started = started or ph[1] == last_phase
  if started then
    local lane = ph[3]
    local base = lane == 3 and 0 or lane * LANE
    local s = last_phase == ph[1] and tonumber(last_score) or from
    local first_day = s and day_of(s) or nil
    local days = rcall('ZRANGEBYSCORE', ph[2], first_day and base + first_day or base,
      to and base + day_of(to) or base + LANE - 1, 'LIMIT', 0, MAX_DAYS)
    for i = 1, #days do
      days[i] = tonumber(days[i])
      all[#all + 1] = days[i]
    end
    walk[#walk + 1] = { phase = ph[1], lane = lane, days = days, s = s, first_day = first_day,
      m = last_phase == ph[1] and last_member or '' }
  end
end
local missing = require_days(all)
if missing then return missing end

-- One phase's shards from its position on. Returns the reply when the page ends within them, else
-- nil: the next phase starts (its position empty).
local function shards(w)
  local phase, s, m, first_day = w.phase, w.s, w.m, w.first_day
  for _, code in ipairs(w.days) do
    local d = code % LANE
    local z = shard_of_day[code]
    local at = (s and d == first_day) and first_after(z, s, m) or 0
    local room = budget - examined
    if room <= 0 then return finish(false) end
    local got = rcall('ZRANGE', z, at, at + room - 1, 'WITHSCORES')
    for i = 1, #got, 2 do
      local id, run_at = got[i], tonumber(got[i + 1])
      if to and run_at > to then return nil end
      examined = examined + 1
      last_phase, last_score, last_member = phase, got[i + 1], id
      local rec = check(id, run_at)
      if rec and add(id, got[i + 1], w.lane == 3 and '' or phase, rec) then return finish(false) end
    end
    if #got / 2 == room then return finish(false) end
    -- The shard is done: the position moves to the next day's start (every entry after it).
    last_phase, last_score, last_member = phase, string.format('%d', day_start(d) + DAY_MS), ''
  end
  if #w.days == MAX_DAYS then return finish(false) end
  return nil
end

for i, w in ipairs(walk) do
  local reply = shards(w)
  if reply then return reply end
  if walk[i + 1] then last_phase, last_score, last_member = walk[i + 1].phase, '', '' end
end
return finish(true)
