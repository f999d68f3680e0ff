-- list.lua: one page of a partition's jobs in one state, after a position, for
-- GET /topics/{t}/jobs (JobListing.java merges the partitions' pages and keeps the positions in
-- the cursor). Reads only.
-- KEYS: see lib.lua; the day shards of the days the days set lists from the position on (at most
-- MAX_DAYS of them per call; one not passed in: DQNEEDDAY before anything is read of it)
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
--   's': first the jobs held back by their groups (phase 'h'; gheld's lexical order: group, runAt,
--        id), then the day shards (phase 'd') in (runAt, id) order; from/to bound runAt
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
--   time it succeeded for 'r'; '' for a held job), a mark (for 's' its gheld member, '' unless
--   held; for 'i' 'x' when its cancel was asked, as get.lua's state letter says, else ''; for 'r'
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
      local entry = rcall('HGET', K_RESULTS, id)
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
if last_phase ~= 'd' then
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

local s, m = tonumber(last_score) or from, last_member
local first_day = s and day_of(s) or '-inf'
local days = rcall('ZRANGEBYSCORE', K_DAYS, first_day, to and day_of(to) or '+inf', 'LIMIT', 0, MAX_DAYS)
for i = 1, #days do days[i] = tonumber(days[i]) end
local missing = require_days(days)
if missing then return missing end
for _, d in ipairs(days) do
  local z = shard_of_day[d]
  local at = (s and d == first_day) and first_after(z, s, m) or 0
  local room = budget - examined
  if room <= 0 then return finish(false) end
  local got = rcall('ZRANGE', z, at, at + room - 1, 'WITHSCORES')
  for i = 1, #got, 2 do
    local id, run_at = got[i], tonumber(got[i + 1])
    if to and run_at > to then return finish(true) end
    examined = examined + 1
    last_phase, last_score, last_member = 'd', got[i + 1], id
    local rec = check(id, run_at)
    if rec and add(id, got[i + 1], '', rec) then return finish(false) end
  end
  if #got / 2 == room then return finish(false) end
  -- The shard is done: the position moves to the next day's start (every entry after it).
  last_phase, last_score, last_member = 'd', string.format('%d', day_start(d) + DAY_MS), ''
end
return finish(#days < MAX_DAYS)
