-- deadsweep.lua: one bounded step over a partition's dead set, for the operator's filtered list,
-- requeue and purge. Examines at most n members in order of death from a cursor, keeps those
-- whose id starts with a prefix and whose last error contains a text, and lists them, requeues
-- them (dead -> scheduled, due now, attempts reset, in one step: revive_dead) or purges them
-- (record and dead-set entry together: purge_dead). Java calls it again from the cursor it
-- returns until it says done: each call is atomic, and n bounds how long it holds Redis — the
-- dead set has no cap, so no call may walk all of it.
-- The cursor is a score and how many members of that score were examined and left in place.
-- Members of one score sort by id, and those this walk requeued or purged are gone, so the next
-- call skips exactly the ones left (an offset, not a scan). Requeue and purge walk oldest first
-- up to `to`, the Redis time the action was asked at: a job that dies meanwhile (a requeued one
-- that fails again too) scores after it and is not touched.
-- KEYS: see lib.lua; the day shard of Redis now (requeue)
-- ARGV[A]   = mode: 'list' (newest first, writes nothing), 'requeue' or 'purge' (oldest first)
-- ARGV[A+1] = from: the cursor's score ('+inf' to start a list, '-inf' an action)
-- ARGV[A+2] = kept: members of score `from` already examined and left in place
-- ARGV[A+3] = to: the last score to examine ('-inf' for a list; the time asked for an action)
-- ARGV[A+4] = n: members to examine at most (Java passes at most 500)
-- ARGV[A+5] = id prefix, '' = any id
-- ARGV[A+6] = error text, '' = any error: a substring of lastError, ASCII letters compared
--             without case (both sides lower-cased)
-- ARGV[A+7] = wake channel (requeue; '' otherwise)
-- ARGV[A+8] = list: matches wanted at most (the walk stops at the one that fills them)
-- Returns {done (1 when the walk reached `to`), from, kept, examined, acted} and, for a list,
-- then id, time of death, record for each match.
local mode, from, kept, to = ARGV[A], ARGV[A + 1], tonumber(ARGV[A + 2]), ARGV[A + 3]
local n, prefix, text = tonumber(ARGV[A + 4]), ARGV[A + 5], string.lower(ARGV[A + 6])
local channel, wanted = ARGV[A + 7], tonumber(ARGV[A + 8])
local listing = mode == 'list'
local now
if mode == 'requeue' then
  now = now_ms()
  local err = require_days({ day_of(now) })
  if err then return err end
end
local batch
if listing then
  batch = rcall('ZRANGE', K_DEAD, from, to, 'BYSCORE', 'REV', 'LIMIT', kept, n, 'WITHSCORES')
else
  batch = rcall('ZRANGE', K_DEAD, from, to, 'BYSCORE', 'LIMIT', kept, n, 'WITHSCORES')
end
local out = { 0, from, kept, 0, 0 }
local examined, acted, plen = 0, 0, #prefix
for i = 1, #batch, 2 do
  local id, score = batch[i], batch[i + 1]
  if score ~= from then from, kept = score, 0 end
  examined = examined + 1
  local rec
  local match = plen == 0 or string.sub(id, 1, plen) == prefix
  if match and (text ~= '' or listing) then
    rec = rcall('HGET', K_JOBS, id)
    match = rec ~= false
    if match and text ~= '' then
      match = string.find(string.lower(decode(rec).err), text, 1, true) ~= nil
    end
  end
  if match and mode == 'requeue' then
    revive_dead(id, now, channel)
  elseif match and mode == 'purge' then
    purge_dead(id)
  else
    kept = kept + 1
  end
  if match then
    acted = acted + 1
    if listing then
      out[#out + 1] = id
      out[#out + 1] = score
      out[#out + 1] = rec
      if acted >= wanted then break end
    end
  end
end
if #batch < n * 2 and examined * 2 == #batch then out[1] = 1 end
out[2], out[3], out[4], out[5] = from, kept, examined, acted
return out
