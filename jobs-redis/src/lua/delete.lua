-- Deletes job ARGV[4]. Returns 1, or 0 when it does not exist.
local id = ARGV[4]
local key = job_key(id)
local s = redis.call('HGET', key, 's')
if not s then
  return 0
end
unindex(key, id, s)
redis.call('ZREM', ALL, id)
delete_job(key, id)
return finish(1)
