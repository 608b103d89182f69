-- Records the progress ARGV[6] of job ARGV[4] running under lease ARGV[5].
-- Returns '1' (accepted) or '0', like the batch scripts.
local key = leased(ARGV[4], ARGV[5])
if not key then
  return '0'
end
redis.call('HSET', key, 'pg', ARGV[6])
return '1'
