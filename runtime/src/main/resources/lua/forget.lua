-- forget.lua: one partition's part in forgetting its topic (DELETE /topics/{t}, or the topic's
-- retention). Java runs 'mark' on every partition, then takes the topic out of the topics SET,
-- then runs 'clear' on every partition; an enqueue racing with it is never lost:
-- * 'mark' refuses a partition that holds jobs (scheduled, in flight or dead) or dead-job callbacks
--   still to send (their job may have been purged or requeued since; forgetting would drop them);
--   otherwise it sets
--   "forgotten" (expiring) and drops "next", so that the first enqueue into the partition from
--   now on sees nothing scheduled, finds the mark, and has Java list the topic again (lib.lua's
--   forgotten_since) — a replica that believes the topic listed would not list it otherwise.
-- * 'clear' deletes what the partition keeps for its topic (flow state, rate-limit pace and group rate-limit state, tick
--   records, dedup ids, stale day and lease bounds, failed callbacks and their data, kept successes and their results), unless a
--   job arrived since 'mark' (then the mark is gone, or the jobs hash is back): that topic is in use again, and Java lists it again.
-- KEYS: see lib.lua (no day shards); then succeeded and results (see lib.lua's K_RESULTS)
-- ARGV[A]   = 'mark' or 'clear'
-- ARGV[A+1] = ms the mark lives ('mark' only): longer than a replica trusts that a topic is listed
-- Returns {scheduled + inflight + dead (all records), inflight, dead, pending callbacks}: all 0 when
-- the step was done.
local what = ARGV[A]
local jobs = rcall('HLEN', K_JOBS)
local callbacks = rcall('ZCARD', K_CALLBACKS)
if jobs > 0 or callbacks > 0 then
  return { jobs, rcall('ZCARD', K_INFLIGHT), rcall('ZCARD', K_DEAD), callbacks }
end
if what == 'mark' then
  rcall('SET', K_FORGOTTEN, '1', 'PX', ARGV[A + 1])
  rcall('DEL', K_NEXT, K_LNEXT)
  return { 0, 0, 0, 0 }
elseif what == 'clear' then
  -- An enqueue took the mark (its job may even be done already): the topic is listed again.
  if rcall('EXISTS', K_FORGOTTEN) == 0 then return { -1, 0, 0, 0 } end
  -- The day shards go with their jobs (Redis drops an empty sorted set); "days" may name stale ones.
  rcall('DEL', K_DAYS, K_LDAYS, K_LNEXT, K_NEXT, K_INFLIGHT, K_LEASES, K_DEAD, K_LEASE_NEXT, K_DONE, K_TICKS, K_PAUSED, K_RATE,
    K_RATE_TAT, K_CBDATA, K_CBFAILED, K_CBNEXT, K_HELD, K_MAX_INFLIGHT, K_CAPPED, K_GROUPS, K_GHELD, K_GADMIT,
    K_GROUP_RATE, K_GROUP_TAT)
  if K_RESULTS then rcall('DEL', K_SUCCEEDED, K_RESULTS) end
  return { 0, 0, 0, 0 }
end
return redis.error_reply('forget.lua: unknown step ' .. what)
