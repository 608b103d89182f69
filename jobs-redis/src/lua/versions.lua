-- Counts the waiting and running jobs of some names by payload version (stored_versions), a
-- bounded number per call: walks the queue's delayed, ready, kready and running sets in turn,
-- each in its own order, from a cursor that the caller passes back. ARGV[4] the set to resume
-- (1 to 4, in that order), ARGV[5] and ARGV[6] the score and member of the last job counted in
-- it ('' and '': from its start), ARGV[7..] the names. Returns {next set (0: done), score,
-- member, counts}, `counts` being name, version, count, ... of the jobs examined.
--
-- The cursor is a position in a set's order rather than an index, so jobs that leave the set
-- meanwhile (a fetch takes the ready set's head) shift nothing: a job that stays in its set is
-- counted once. A job that moves between sets during the walk (made ready, fetched, retried)
-- may be counted twice or not at all; on a queue at rest the counts are exact.

-- At most this many jobs are examined per call.
local VERSIONS_BUDGET = 1000

-- The sets walked, and whether their members are ready-set members (run_at, then id).
local SETS = { { DELAYED, false }, { READY, true }, { KREADY, true }, { RUNNING, false } }

-- The rank of the first member of `set` that comes after `score`, `member` in its order
-- (score, then member), whether or not that member is still in it.
local function rank_after(set, score, member)
  local lo = redis.call('ZCOUNT', set, '-inf', '(' .. score)
  local hi = redis.call('ZCOUNT', set, '-inf', score)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local at = redis.call('ZRANGE', set, mid, mid)[1]
    if at and at <= member then
      lo = mid + 1
    else
      hi = mid
    end
  end
  return lo
end

local tally = version_tally(7)
local waiting = { p = true, s = true, r = true }
local set_index, score, member = tonumber(ARGV[4]), ARGV[5], ARGV[6]
local left = VERSIONS_BUDGET
while set_index <= #SETS and left > 0 do
  local set, ready = SETS[set_index][1], SETS[set_index][2]
  local from = 0
  if member ~= '' then
    from = rank_after(set, score, member)
  end
  local got = redis.call('ZRANGE', set, from, from + left - 1, 'WITHSCORES')
  for j = 1, #got, 2 do
    local id = got[j]
    if ready then
      id = string.sub(id, 15)
    end
    local v = redis.call('HMGET', job_key(id), 's', 'm', 'v')
    local name = v[2] and meta_name(v[2])
    -- A job whose name or version does not read is corrupt: a fetch fails it, unrun.
    if waiting[v[1] or ''] then
      tally_job(tally, name, tonumber(v[3] or '1'))
    end
  end
  left = left - #got / 2
  if left > 0 then
    set_index, score, member = set_index + 1, '', ''
  else
    score, member = got[#got], got[#got - 1]
  end
end
if set_index > #SETS then
  set_index = 0
end
return { set_index, score, member, tally_counts(tally) }
