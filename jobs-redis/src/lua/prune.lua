-- Removes the oldest finished (completed or cancelled) jobs beyond the retention: ARGV[4] keep
-- at most this many ('' for no count limit), ARGV[5] remove those finished before this time
-- ('' for no age limit), ARGV[6] at most this many per call. Returns how many were removed.
if ARGV[4] == '' and ARGV[5] == '' then
  return 0
end
local over = 0
if ARGV[4] ~= '' then
  over = math.max(redis.call('ZCARD', DONE) - tonumber(ARGV[4]), 0)
end
local before = nil
if ARGV[5] ~= '' then
  before = tonumber(ARGV[5])
end
local limit = tonumber(ARGV[6])
if limit < 1 then
  return 0
end
local oldest = redis.call('ZRANGE', DONE, 0, limit - 1, 'WITHSCORES')
local doomed = {}
for j = 1, #oldest, 2 do
  if not (#doomed < over or (before and tonumber(oldest[j + 1]) < before)) then
    break
  end
  local id = oldest[j]
  local key = job_key(id)
  local v = redis.call('HMGET', key, 's', 'tg')
  recount(v[1] or nil, nil)
  delete_job(key, id, v[2])
  doomed[#doomed + 1] = id
end
zrem_all(DONE, doomed)
zrem_all(ALL, doomed)
return finish(#doomed)
