-- The job names a worker runs (fetch, peek): a job of another name stays where it is, for a
-- worker that knows it (during a rolling deploy, a newer release's jobs wait for newer workers).

-- At most this many ready jobs are examined per call when some are of unknown names.
local KNOWN_SCAN = 1000

-- The names ARGV[from..] as a set, or nil when there are none (every name is taken).
local function known_names(from)
  if #ARGV < from then
    return nil
  end
  local known = {}
  for i = from, #ARGV do
    known[ARGV[i]] = true
  end
  return known
end

-- Whether the job with hash `fields` (as HGETALL gives them) is one to take: its name is known,
-- or it has none to read (a corrupt job, which the caller fails as such).
local function takes(known, fields)
  for f = 1, #fields, 2 do
    if fields[f] == 'm' then
      local name = string.match(fields[f + 1], '^[^|]*|[^|]*|[^|]*|(.*)$')
      return name == nil or known[name] == true
    end
  end
  return true
end

-- The first `limit` ready jobs of known names, in ready order, without taking them: a list of
-- {member, score, fields}, examining at most KNOWN_SCAN jobs.
local function known_head(limit, known)
  local out = {}
  local from = 0
  local window = math.max(limit, 16)
  while #out < limit and from < KNOWN_SCAN do
    local members = redis.call('ZRANGE', READY, from, from + window - 1, 'WITHSCORES')
    if #members == 0 then
      break
    end
    for j = 1, #members, 2 do
      local fields = redis.call('HGETALL', job_key(string.sub(members[j], 15)))
      if takes(known, fields) then
        out[#out + 1] = { members[j], members[j + 1], fields }
        if #out == limit then
          break
        end
      end
    end
    from = from + window
  end
  return out
end
