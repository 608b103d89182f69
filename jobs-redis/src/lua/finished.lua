-- How many of the queue's jobs finished (completed or cancelled) at or after ARGV[4]
-- (microseconds), of those the retention keeps: the ids of `done`'s members since then (see
-- head.lua).
local n = 0
for _, member in ipairs(redis.call('ZRANGE', DONE, ARGV[4], '+inf', 'BYSCORE')) do
  n = n + #member / ID_LEN
end
return n
