-- Writes under a lease.

-- Frees unique key `u` (if any) when job `id` holds it.
local function release_unique(u, id)
  if u and redis.call('HGET', UNIQUE, u) == id then
    redis.call('HDEL', UNIQUE, u)
  end
end

local function clear_lease(key, id)
  redis.call('HDEL', key, 'w', 'l')
  redis.call('ZREM', RUNNING, id)
end

-- The key, unique key and lease expiry (text) of job `id` if it is running under the lease
-- `token`, else nil. The lease field `l` is the token (32 hex digits), ':', then the expiry.
local function leased(id, token)
  local key = job_key(id)
  local v = redis.call('HMGET', key, 's', 'l', 'u')
  if v[1] == 'r' and v[2] and string.sub(v[2], 1, 32) == token then
    return key, v[3], string.sub(v[2], 34)
  end
  return nil
end

-- The batch writes' loop: for each job whose arguments start at ARGV[i] (from ARGV[first], in
-- steps of `step`: id, token, then its own), calls `write(i, id, key, u, expiry)` when the job
-- runs under that token; `write` says whether it wrote. Returns 1 (written) or 0 per job.
local function each_leased(first, step, write)
  local out = {}
  for i = first, #ARGV, step do
    local id = ARGV[i]
    local key, u, expiry = leased(id, ARGV[i + 1])
    out[#out + 1] = (key and write(i, id, key, u, expiry)) and 1 or 0
  end
  return out
end
