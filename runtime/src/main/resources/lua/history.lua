-- history.lua: adds one replica's flush to one hour of a topic's history (or of the total of all
-- topics), summed with what is there: several replicas, and a replica restarted, add up.
-- KEYS[1] -> HASH minute of the hour (0-59) -> "e:<enqueued>,s:<succeeded>,f:<failed>,<bin>:<n>,..."
--            where <bin>:<n> counts attempts whose lateness fell in that bin (see HistoryCounts.bin;
--            bins ascending, zeros left out). Counts are not lib.lua's partition keys: the prelude
--            sees KEYS[1] as "jobs" and ARGV[1] = 0 day shards, and nothing here uses them.
-- KEYS[2] -> ZSET the flush ids applied to KEYS[1] lately -> when, ms: a call is applied once, so
--            that the retry of a call that timed out but ran in Redis adds nothing again (a failed
--            call is retried as it was, same id, for at most an hour: ids older than two go)
-- ARGV[A] = Unix seconds the key expires at; ARGV[A+1] = the call's flush id; ARGV[A+2..] = pairs:
--           minute, counts to add (same format).
-- Returns 1, or 0 when the flush id was applied already (nothing changed).
local key, applied, flush_id = KEYS[1], KEYS[2], ARGV[A + 1]
if rcall('ZSCORE', applied, flush_id) then return 0 end

local function hist_add(s, into)
  if s then
    for k, n in string.gmatch(s, '([^,:]+):(%d+)') do
      into[k] = (into[k] or 0) + tonumber(n)
    end
  end
end

local function hist_text(t)
  local out = {}
  for _, k in ipairs({ 'e', 's', 'f' }) do
    if t[k] and t[k] > 0 then out[#out + 1] = k .. ':' .. string.format('%d', t[k]) end
  end
  local bins = {}
  for k, _ in pairs(t) do
    local b = tonumber(k)
    if b then bins[#bins + 1] = b end
  end
  table.sort(bins)
  for _, b in ipairs(bins) do
    local n = t[tostring(b)]
    if n > 0 then out[#out + 1] = b .. ':' .. string.format('%d', n) end
  end
  return table.concat(out, ',')
end

for i = A + 2, #ARGV - 1, 2 do
  local t = {}
  hist_add(rcall('HGET', key, ARGV[i]), t)
  hist_add(ARGV[i + 1], t)
  rcall('HSET', key, ARGV[i], hist_text(t))
end
rcall('EXPIREAT', key, ARGV[A])
local t = rcall('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
rcall('ZADD', applied, now, flush_id)
rcall('ZREMRANGEBYSCORE', applied, '-inf', now - 7200000)
rcall('EXPIREAT', applied, ARGV[A])
return 1
