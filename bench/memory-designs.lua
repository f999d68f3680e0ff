-- memory-designs.lua: Redis memory per scheduled job under candidate layouts of the records
-- (issue 13, part 3), without delayq: run on an empty Redis and read used_memory before and after.
--   redis-cli FLUSHALL; M0=used_memory; redis-cli EVAL "$(cat bench/memory-designs.lua)" 0 <design> <n> <buckets>; M1=...
-- design: zset (the due shard alone), hash (the records' hash alone), both (today's layout),
--         bucket (due shard + records in <buckets> small hashes by a hash of the id).
-- Jobs as the benchmark makes them: ids "0".."n-1", runAt spread over 10 s, 16-byte payload, the
-- record "<runAt base 36>\n<payload>" (25 bytes).
--
-- Measured 2026-12-01 on Redis 7.0.15 (Debian), n = 50,000, B per job:
--   zset 104.8, hash 83.0, both 186.4 (the benchmark's 188 B: the rest is the days/next keys and noise)
--   bucket, hash-max-listpack-entries 512 (Redis' built-in default, no config file: how the tests and
--   the benchmark start it): 256 buckets 139.3, 512: 139.5, 782: 138.8, 1024: 140.0 (all listpack)
--   bucket, hash-max-listpack-entries 128 (Debian's redis.conf): 512 buckets 166.0 (buckets of ~98
--   ids average, the fuller ones converted to hashtable), 1024: 141.2
--   n = 1,000 (a sparse partition): both 182.3; 1024 buckets 161.5 (a key per few jobs); 64 buckets 142.5
-- So records in listpack buckets meet 150 B per job only while the bucket count suits the
-- partition's size (about n/64 to n/100 buckets): a fixed count is either too many keys for a
-- small partition or overflows for a large one, and a value over hash-max-listpack-value (64 B:
-- a payload of ~40 B or more, or a lastError) turns its whole bucket into a hashtable.
local design, n, nb = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local t0 = 1764633600000
local payload = '"xxxxxxxxxxxxxx"'
for i = 0, n - 1 do
  local id = tostring(i)
  local run_at = t0 + math.floor(i * 10000 / n)
  local rec = 'mh7x3k2a\n' .. payload
  if design ~= 'hash' then
    redis.call('ZADD', 'dq:{t#0}:due:20261202', run_at, id)
  end
  if design == 'hash' or design == 'both' then
    redis.call('HSET', 'dq:{t#0}:jobs', id, rec)
  elseif design == 'bucket' then
    local h = 0
    for c = 1, #id do h = (h * 31 + string.byte(id, c)) % 2147483647 end
    redis.call('HSET', 'dq:{t#0}:jobs:' .. (h % nb), id, rec)
  end
end
return n
