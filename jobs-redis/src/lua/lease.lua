-- Writes under a lease.

-- Frees unique key `u` (if any) when job `id` holds it.
local function release_unique(u, id)
  if u and redis.call('HGET', UNIQUE, u) == id then
    redis.call('HDEL', UNIQUE, u)
  end
end

-- Counts one running job of key limits `k` (its `k` field; nil or false: none) less, for the
-- key's concurrency limit: every script that moves a job out of running calls it.
local function stop_running(k)
  if k then
    local limited = key_of(k)
    if redis.call('HINCRBY', KRUN, limited, -1) <= 0 then
      redis.call('HDEL', KRUN, limited)
    end
  end
end

-- Takes jobs `ids`, which leave running, out of the reserved leases (see flow.lua), if any are
-- held: every script that moves a job out of running calls it.
local function forget_reserved(ids)
  if redis.call('EXISTS', RESERVED) == 1 then
    zrem_all(RESERVED, ids)
  end
end

-- Ends the lease of running job `id` (its key limits `k`).
local function clear_lease(key, id, k)
  redis.call('HDEL', key, 'w', 'l')
  redis.call('ZREM', RUNNING, id)
  stop_running(k)
  forget_reserved({ id })
end

-- The key, unique key, lease expiry (text), key limits and workflow step (`wf`) of job `id` if
-- it is running under the lease `token`, else nil. The lease field `l` is the token (32 hex digits), ':', then the
-- expiry.
local function leased(id, token)
  local key = job_key(id)
  local v = redis.call('HMGET', key, 's', 'l', 'u', 'k', 'wf')
  if v[1] == 'r' and v[2] and string.sub(v[2], 1, 32) == token then
    return key, v[3], string.sub(v[2], 34), v[4], v[5]
  end
  return nil
end

-- The batch writes' loop: for each job whose arguments start at ARGV[i] (from ARGV[first], in
-- steps of `step`: id, token, then its own), calls `write(i, id, key, u, expiry, k, wf)` when
-- the job runs under that token; `write` says whether it wrote. Returns '1' (written) or '0'
-- per job, which the scripts answer as one string of digits (one value for the caller to
-- parse, however large the batch).
local function each_leased(first, step, write)
  local out = {}
  for i = first, #ARGV, step do
    local id = ARGV[i]
    local key, u, expiry, k, wf = leased(id, ARGV[i + 1])
    out[#out + 1] = (key and write(i, id, key, u, expiry, k, wf)) and '1' or '0'
  end
  return out
end
