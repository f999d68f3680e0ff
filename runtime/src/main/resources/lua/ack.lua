-- ack.lua: completes jobs whose observer returned normally: deletes lease, in-flight entry and
-- record (with a result retention, keeping each with its result as succeeded: lib.lua's
-- keep_results), and with a dedup window remembers the ids as succeeded (see remember_done).
-- (Takers usually carry their acks in their next take; this script flushes the rest.) The slots
-- it frees wake the takers a concurrency cap held back (lib.lua's free_slots).
-- KEYS: see lib.lua; today's shard, where a job its group held back goes when an acked job of the
--       group frees its slot (see group_release; without it: DQNEEDDAY, before any write)
-- ARGV[A]   = dedup window ms of the topic, 0 = none
-- ARGV[A+1] = wake channel
-- ARGV[A+2] = n; then n pairs: id, lease token (n < 0: the topic's result retention, then -n
--             triples: id, lease token, result; see lib.lua's ack_leases)
-- Returns the stale ids: their lease is held by another attempt (it expired and the job was
-- retaken), so that attempt's state is left as it is.
local stale, acked = ack_leases(A + 3, tonumber(ARGV[A + 2]), tonumber(ARGV[A]), nil, ARGV[A + 1])
if not stale then return acked end
if acked > 0 then free_slots(ARGV[A + 1]) end
return stale
