-- get.lua: one job's record and state, read atomically.
-- KEYS: see lib.lua (no day shards)
-- ARGV[A] = id
-- Returns {} when unknown, else {record, state letter (s, i, d), lease deadline or death time or ''}.
local id = ARGV[A]
local rec = rcall('HGET', K_JOBS, id)
if not rec then return {} end
local lease = rcall('ZSCORE', K_INFLIGHT, id)
if lease then return { rec, 'i', lease } end
local died = rcall('ZSCORE', K_DEAD, id)
if died then return { rec, 'd', died } end
return { rec, 's', '' }
