-- Which jobs a list or a bulk operation applies to: the rule of `JobFilter::matches`.

-- The filter whose six arguments start at ARGV[i]: status code, name, tag, created at or after,
-- created before, finished before (times in microseconds), each '' when not set. nil when none
-- is set: every job matches.
local function read_filter(i)
  local f = {
    status = ARGV[i],
    name = ARGV[i + 1],
    tag = ARGV[i + 2],
    created_after = tonumber(ARGV[i + 3]),
    created_before = tonumber(ARGV[i + 4]),
    finished_before = tonumber(ARGV[i + 5]),
  }
  if f.status == '' then
    f.status = nil
  end
  if f.name == '' then
    f.name = nil
  end
  if f.tag == '' then
    f.tag = nil
  end
  if f.status or f.name or f.tag or f.created_after or f.created_before or f.finished_before then
    return f
  end
  return nil
end

-- Whether a job matches filter `f` (not nil): its status code `s`, its `m` (whose last part is
-- its name), its created_at and finished_at (text, the latter nil while it is active; a
-- created_at that is not a number matches no bound on it), and
-- `tagged(tag)`, whether it carries a tag. The rule of both layouts (streams/keys.lua reads a
-- job's parts from its entry).
local function job_matches(f, s, m, created, finished, tagged)
  if f.status and s ~= f.status then
    return false
  end
  if f.name and meta_name(m) ~= f.name then
    return false
  end
  created = tonumber(created)
  if (f.created_after or f.created_before) and not created then
    return false
  end
  if (f.created_after and created < f.created_after)
    or (f.created_before and created >= f.created_before) then
    return false
  end
  if f.finished_before then
    local at = (s == 'c' or s == 'd' or s == 'x') and tonumber(finished)
    if not at or at >= f.finished_before then
      return false
    end
  end
  return not f.tag or tagged(f.tag)
end

-- Whether job `id` (hash `key`) exists and matches filter `f` (nil matches every job).
local function matches(key, id, f)
  if not f then
    return true
  end
  local v = redis.call('HMGET', key, 's', 'm', 'c', 'f')
  if not v[1] then
    return false
  end
  return job_matches(f, v[1], v[2], v[3], v[4], function(tag)
    return redis.call('ZSCORE', TAG .. tag, id) ~= false
  end)
end
