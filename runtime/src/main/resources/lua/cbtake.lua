-- cbtake.lua: claims the dead-job callbacks of a partition that are due (see bury in lib.lua):
-- each stays in callbacks, due again a claim later, and its tries go up by one. The claim is what
-- lets any replica with the topic's dead-url send it: the one that claimed it sends it; should it
-- die before it settles it (cbsettle.lua), the callback falls due again and another replica takes
-- it (at least once: a callback may be sent twice, never lost).
-- KEYS: see lib.lua (no day shard)
-- ARGV[A]   = the most callbacks to claim (bounds the script; the caller asks again while a full
--             batch came back)
-- ARGV[A+1] = claim ms: how long the caller may take to send them
-- Returns a flat list: callback, its data (see cbdata in lib.lua, tries already counted), ...
local limit, claim = tonumber(ARGV[A]), tonumber(ARGV[A + 1])
local now = now_ms()
local due = rcall('ZRANGEBYSCORE', K_CALLBACKS, '-inf', now, 'LIMIT', 0, limit)
local out = {}
for _, member in ipairs(due) do
  local data = rcall('HGET', K_CBDATA, member)
  if data then
    local c = string.find(data, ',', 1, true)
    data = (tonumber(string.sub(data, 1, c - 1)) + 1) .. string.sub(data, c)
    rcall('HSET', K_CBDATA, member, data)
    rcall('ZADD', K_CALLBACKS, now + claim, member)
    out[#out + 1] = member
    out[#out + 1] = data
  else
    -- Its data is gone (cannot happen through delayq's scripts): nothing to send, so nothing to keep.
    rcall('ZREM', K_CALLBACKS, member)
  end
end
if #due > 0 then cb_next() end
return out
