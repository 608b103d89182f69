-- The jobs a worker runs (fetch, peek): the names it knows, each up to a payload version. A
-- job of another name, or stored at a newer version, stays where it is, for a worker that knows
-- it (during a rolling deploy, a newer release's jobs wait for newer workers). And the tally of
-- the versions stored, which a worker checks at start (versions.lua, streams/versions.lua).

-- At most this many ready jobs are examined per call when some are of unknown names.
local KNOWN_SCAN = 1000

-- The pairs ARGV[from..last] (name, newest version; `last` nil: to the end) as a table name ->
-- version, or nil when there are none (every job is taken; a fetch that knows no job is not
-- sent).
local function known_jobs(from, last)
  last = last or #ARGV
  if last < from then
    return nil
  end
  local known = {}
  for i = from, last - 1, 2 do
    local version = tonumber(ARGV[i + 1])
    if not known[ARGV[i]] or known[ARGV[i]] < version then
      known[ARGV[i]] = version
    end
  end
  return known
end

-- Whether the job with hash `fields` (as HGETALL gives them) is one to take: its name is known
-- at its version (`v`, 1 when absent) or a newer one, or it has no name or version to read (a
-- corrupt job, which the caller fails as such).
local function takes(known, fields)
  local name, version = nil, 1
  for f = 1, #fields, 2 do
    local field = fields[f]
    if field == 'm' then
      name = meta_name(fields[f + 1])
      if name == nil then
        return true
      end
    elseif field == 'v' then
      version = tonumber(fields[f + 1])
      if version == nil then
        return true
      end
    end
  end
  if name == nil then
    return true
  end
  local newest = known[name]
  return newest ~= nil and version <= newest
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

-- A tally of stored jobs by name and version (versions.lua, streams/versions.lua): `asked`, the
-- names ARGV[from..] as a set, and the counts in the order first met.
local function version_tally(from)
  local tally = { asked = {}, counts = {}, order = {} }
  for i = from, #ARGV do
    tally.asked[ARGV[i]] = true
  end
  return tally
end

-- Counts a job of `name` (nil when it does not read) at `version` (nil when it does not read)
-- in `tally`, when its name is asked for.
local function tally_job(tally, name, version)
  if name and tally.asked[name] and version then
    local key = name .. '|' .. int(version)
    local c = tally.counts[key]
    if not c then
      c = { name, int(version), 0 }
      tally.counts[key] = c
      tally.order[#tally.order + 1] = key
    end
    c[3] = c[3] + 1
  end
end

-- The counts of `tally` as name, version, count, ... in the order first met.
local function tally_counts(tally)
  local out = {}
  for _, key in ipairs(tally.order) do
    local c = tally.counts[key]
    out[#out + 1] = c[1]
    out[#out + 1] = c[2]
    out[#out + 1] = int(c[3])
  end
  return out
end
