-- get.lua: one job's record and state, read atomically.
-- KEYS: see lib.lua (no day shards)
-- ARGV[A] = id, ARGV[A+1] = dedup window ms of the topic, 0 = none
-- ARGV[A+2] = result retention ms of the topic, 0 or absent = none; with one, KEYS succeeded and
--             results follow (see lib.lua's keep_results)
-- Returns {} when unknown, else {record, state letter (s, i, d, or x = in flight and cancelling:
-- see cancel.lua), lease deadline or death time or '',
-- '1' when a scheduled job is held back by its group (see lib.lua's gheld) else ''},
-- or {results entry, 'r', time it succeeded} for a succeeded job kept by the retention (one
-- kept longer, by an earlier retention, counts as gone),
-- or {'', 'c', time it succeeded} for an id that succeeded within the dedup window.
local id = ARGV[A]
local rec = rcall('HGET', K_JOBS, id)
if not rec then
  local retention = tonumber(ARGV[A + 2]) or 0
  if retention > 0 then
    local finished = rcall('ZSCORE', K_SUCCEEDED, id)
    if finished and tonumber(finished) > now_ms() - retention then
      local kept = rcall('HGET', K_RESULTS, id)
      if kept then return { kept, 'r', finished } end
    end
  end
  local window = tonumber(ARGV[A + 1])
  if window > 0 then
    local finished = rcall('ZSCORE', K_DONE, id)
    if remembered(finished, window, now_ms()) then return { '', 'c', finished } end
  end
  return {}
end
local lease = rcall('ZSCORE', K_INFLIGHT, id)
if lease then return { rec, cancelling(id) and 'x' or 'i', lease } end
local died = rcall('ZSCORE', K_DEAD, id)
if died then return { rec, 'd', died } end
return { rec, 's', '', is_held(id, decode(rec)) and '1' or '' }
