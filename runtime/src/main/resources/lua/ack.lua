-- ack.lua: completes jobs whose observer returned normally: deletes lease, in-flight entry and record.
-- (Takers usually carry their acks in their next take; this script flushes the rest.)
-- KEYS: see lib.lua (no day shards)
-- ARGV[A] = n; then n pairs: id, lease token
-- Returns the stale ids: their lease is held by another attempt (it expired and the job was
-- retaken), so that attempt's state is left as it is.
return ack_leases(A + 1, tonumber(ARGV[A]))
