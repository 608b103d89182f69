-- Counts the waiting and running jobs of some names by payload version (stored_versions), with
-- versions.lua's arguments and reply, a bounded number of jobs per call: walks `xdelayed` and
-- `xapart`, then each stream of the queue (in the order of `held_streams`) twice, its entries
-- not yet delivered and its pending ones. ARGV[4] the step to resume (1: `xdelayed`, 2:
-- `xapart`; 2k+1 and 2k+2: stream k's undelivered and pending entries), ARGV[5] where it goes
-- on ('': from its start; the `ZSCAN` cursor, or the last entry counted), ARGV[6] unused,
-- ARGV[7..] the names. Returns {next step (0: done), where it goes on, '', counts}, `counts`
-- being name, version, count, ... of the jobs examined. A job that moves during the walk may be counted twice or not at all; on a queue at
-- rest the counts are exact.

-- At most this many jobs are examined per call.
local VERSIONS_BUDGET = 1000

local tally = version_tally(7)

-- Counts the job of `fields` (an entry's, or a delayed job's) when its name is asked for. A job
-- whose `j` or version does not read is corrupt: a fetch fails it, unrun.
local function count(fields)
  local _, m = unpack_j(field_of(fields, 'j') or '')
  tally_job(tally, m and meta_name(m), tonumber(field_of(fields, 'v') or '1'))
end

local step, cursor = tonumber(ARGV[4]), ARGV[5]
local all = held_streams()
local left = VERSIONS_BUDGET
while step <= 2 * #all + 2 and left > 0 do
  local next_cursor = nil
  if step <= 2 then
    -- Members of `xdelayed` are ids; those of `xapart`, ids after their run_at (14 digits).
    local set, from = XDELAYED, 1
    if step == 2 then
      set, from = XAPART, 15
    end
    local got = redis.call('ZSCAN', set, cursor == '' and '0' or cursor, 'COUNT', left)
    for k = 1, #got[2], 2 do
      local fields = redis.call('HGETALL', delayed_key(string.sub(got[2][k], from)))
      local s = field_of(fields, 's')
      if s == 's' or s == 'p' then
        count(fields)
      end
    end
    left = left - #got[2] / 2
    if got[1] ~= '0' then
      next_cursor = got[1]
    end
  else
    local stream = all[math.floor((step - 1) / 2)]
    local entries = {}
    if redis.call('EXISTS', stream) == 0 then
      -- A priority's streams not made yet, or `x` before the queue's first job: nothing.
    elseif step % 2 == 1 then
      -- Not delivered yet: after the group's last delivered entry (held back while paused).
      local from = cursor
      if from == '' then
        from = (stream == XSTREAM and redis.call('GET', XHELD)) or last_delivered(stream) or '0-0'
      end
      entries = redis.call('XRANGE', stream, '(' .. from, '+', 'COUNT', left)
    else
      local held = redis.call('XPENDING', stream, 'g', cursor == '' and '-' or '(' .. cursor, '+',
        left)
      for _, h in ipairs(held) do
        local got = redis.call('XRANGE', stream, h[1], h[1])[1]
        entries[#entries + 1] = got or { h[1], {} }
      end
    end
    for _, e in ipairs(entries) do
      count(e[2])
    end
    left = left - #entries
    if left <= 0 and #entries > 0 then
      next_cursor = entries[#entries][1]
    end
  end
  if next_cursor then
    cursor = next_cursor
  else
    step, cursor = step + 1, ''
  end
end
if step > 2 * #all + 2 then
  step = 0
end
return { step, cursor, '', tally_counts(tally) }
