-- get.lua: one job's record and state, read atomically.
-- KEYS: see lib.lua (no day shards)
-- ARGV[A] = id, ARGV[A+1] = dedup window ms of the topic, 0 = none
-- Returns {} when unknown, else {record, state letter (s, i, d, or x = in flight and cancelling:
-- see cancel.lua), lease deadline or death time or '',
-- '1' when a scheduled job is held back by its group (see lib.lua's gheld) else ''},
-- or {'', 'c', time it succeeded} for an id that succeeded within the dedup window.
local id = ARGV[A]
local rec = rcall('HGET', K_JOBS, id)
if not rec then
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
