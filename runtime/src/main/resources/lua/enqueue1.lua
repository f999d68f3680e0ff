-- enqueue1.lua: enqueue.lua for the most common call, one job with no dedup window and no
-- recurring tick, in fewer commands: HSETNX both checks and writes the record (enqueue.lua reads
-- all ids with HMGET first, for a batch), and Redis TIME is read only for a delay (a runAt
-- needs no clock). Same KEYS, ARGV and reply as enqueue.lua with n = 1, except:
-- ARGV[A+2] (dedup window) must be 0, ARGV[A+3] (schedule) '' and the job's ifExists 'k' (Java
-- sends those calls, batches, and the outbox's relays, whose row token it does not read, to
-- enqueue.lua); the reply's now is 0 when the job came with a runAt.
-- With the claims key (several partitions), a claimed id answers {'claimed', now, 1, claim} as
-- enqueue.lua does.
-- The reply ends with 'relist' when the topic was forgotten since the partition emptied (see
-- forget.lua): Java lists the topic again before it answers.
-- Errors: DQNEEDDAY (see lib.lua) when the runAt falls on a day whose shard was not passed.
local J = A + 6
local id, mode, value = ARGV[J], ARGV[J + 1], tonumber(ARGV[J + 2])
local now, run_at = 0, value
if mode == 'd' then
  now = now_ms()
  run_at = now + value
end
local priority = tonumber(ARGV[J + 11] or '') or 3
local day = code_of(priority, day_of(run_at))
local shard = shard_of_day[day]
if not shard then return require_days({ day }) end

if K_CLAIMS then
  local claim = rcall('HGET', K_CLAIMS, id)
  if claim then return { 'claimed', now_ms(), 1, claim } end
end
local r = { run_at = run_at, trace = ARGV[A + 1], attempts = 0, max = tonumber(ARGV[J + 3]), err = '', payload = ARGV[J + 4],
  retry = ARGV[J + 6], group = ARGV[J + 7], timeout = ARGV[J + 9] or '', expires = tonumber(ARGV[J + 10] or ''),
  priority = priority }
if rcall('HSETNX', K_JOBS, id, encode(r)) == 0 then
  local found = decode(rcall('HGET', K_JOBS, id))
  local state = state_of(id)
  return { now, 0, found.run_at, found.attempts, state == 'i' and cancelling(id) and 'x' or state }
end
rcall('ZADD', shard, run_at, id)
local out = { now, 1, run_at, 0, 's' }
local lane = day >= LANE
rcall('ZADD', lane and K_LDAYS or K_DAYS, day, day)
local head_key = lane and K_LNEXT or K_NEXT
local head = tonumber(rcall('GET', head_key))
-- Nothing scheduled before (priority 3 or lanes): the topic may have been forgotten.
if not head and not rcall('GET', lane and K_NEXT or K_LNEXT) and forgotten_since() then out[6] = 'relist' end
if not head or run_at < head then
  rcall('SET', head_key, run_at)
  wake(ARGV[A], run_at)
end
return out
