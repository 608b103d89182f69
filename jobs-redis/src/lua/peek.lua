-- Promotes due delayed jobs and returns the first ARGV[4] of the ready set with their
-- priorities, without leasing them (the first step of a fetch across queues).
if promote(1000) > 0 then
  wake()
end
return finish(redis.call('ZRANGE', READY, 0, tonumber(ARGV[4]) - 1, 'WITHSCORES'))
