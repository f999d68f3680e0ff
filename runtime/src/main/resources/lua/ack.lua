-- ack.lua: completes jobs whose observer returned normally: deletes lease, in-flight entry and
-- record, and with a dedup window remembers the ids as succeeded (see lib.lua's remember_done).
-- (Takers usually carry their acks in their next take; this script flushes the rest.)
-- KEYS: see lib.lua (no day shards)
-- ARGV[A]   = dedup window ms of the topic, 0 = none
-- ARGV[A+1] = n; then n pairs: id, lease token
-- Returns the stale ids: their lease is held by another attempt (it expired and the job was
-- retaken), so that attempt's state is left as it is.
return ack_leases(A + 2, tonumber(ARGV[A + 1]), tonumber(ARGV[A]))
