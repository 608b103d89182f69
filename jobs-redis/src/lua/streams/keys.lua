-- The keys of a queue in the layout on Redis Streams (see streams/mod.rs), beside head.lua's:
--   x          stream, one entry per job of the default priority made ready: `j` first (its id,
--              its run_at as of when it was added, its `m` and its payload, see
--              streams/packed.rs), then the other fields of its record that never change
--              (record.rs's names), its attempts so far (`a`) and created_at (`c`, left out
--              when it is the run_at); consumer group `g`, whose consumers are the workers and
--              whose pending entries are the running jobs
--   xr         stream, as `x`, of the jobs made pending again at a run_at already past (released,
--              rescued): fetches read it before `x`, so that they keep their place ahead of the
--              jobs that became ready since
--   x:<p>, xr:<p>  the same two for priority p, another than the default
--   xhidden    `x` while a fetch's transaction hides it from its `XREADGROUP` (see fetch.lua):
--              it exists only inside that transaction
--   xlevels    zset, score and member p: the priorities other than the default in use
--   ids        hash, job id -> its current entry: the entry id, `r` before it for an entry of an
--              `xr` stream, `<p>:` before that for priority p; or `d` while its fields are
--              `d:<id>`
--   xdelayed   zset, score run_at, member id: the jobs waiting for a future run_at
--   d:<id>     hash, such a job's fields, and its status `s` (scheduled or pending); or those
--              of a job cancelled before it ran (`s` then `x`: its entry is deleted, so that
--              no read delivers it)
--   res        hash, job id -> how it ended: `mark|started_at|finished_at|result` when it
--              completed (the mark of the completing lease's token, 16 base64 digits, as the
--              hash layout's `l` keeps it), `d|started_at|finished_at|` when it died,
--              `x|started_at|finished_at|` when it was cancelled (started_at empty when it
--              never ran; one cancelled while it ran keeps its entry, acknowledged)
--   lease:<c>  hash, fetch call c's lease: worker `w`, start `s`, expiry `x`, the stream it
--              read `k` (after the key base: a call reads one stream), its first and last entry
--              there `f` and `l`, and the expiry of each entry renewed since (the field is the
--              entry id); deleted once none of its entries is pending. Inside a fetch's
--              transaction it holds `o`, the last entry of `x` delivered before the fetch,
--              and `n`, how many of `x`'s entries were pending for the worker then. An idle
--              worker's blocked read (see wait.lua) reserves its call's lease before it
--              reads: `f` and `l` then name a range that holds no entry (UNREAD_FIRST,
--              UNREAD_LAST), until adopt.lua writes what the read took
--   leases     zset, score the earliest expiry of a call, member `worker|c`
--   xwaiting   hash, the blocked reads of `x` under way: field `worker|c` (as in `leases`),
--              value the reservation's expiry; an enqueue whose jobs all go to `x` wakes no
--              worker while it holds any (the `XADD` serves them), and a read leaves it once
--              it returned (adopt.lua), or a rescue drops it with the reservation
--   xheld      string, while the queue is paused: the last entry of `x` its group had
--              delivered, which a resume sets the group back to (see pause.lua); the group's
--              last delivered entry is then `x`'s last, so that no read, blocked or not,
--              takes an entry of a paused queue
--   xapart     zset, score the priority, member run_at (14 hex digits) and id (head.lua's
--              `ready_member`): the due jobs that wait apart from the streams, each a `d:<id>`
--              hash (status pending), in the order fetches take them (see fetch.lua): those
--              with key limits, and those a worker set aside, having read them but not running
--              their name or version (see aside.lua); a fetch adds those it takes to `xa` and
--              leases them at once
--   xa         stream of the jobs a fetch took from `xapart`, with group `g` as `x`'s: its
--              entries are pending for their workers from the call that added them (the id
--              map names them `a<entry>`); no fetch reads it otherwise, and a job with key
--              limits that leaves running goes back to `xapart`, so that it keeps its place
--   xkeyed     hash, job id -> the unique key it holds, for each active job that holds one
--              (head.lua's `unique` maps the key back), so that a write that ends jobs finds
--              their keys without reading their entries
--   progress   hash, job id -> the progress its handler last recorded
-- and head.lua's `counts` (with `q`, the entries not yet delivered, beside the statuses), `done`,
-- `dead`, `unique` (each unique key held, to its job) and `e:<id>` (the errors of each attempt).
local XSTREAM, XRETURNED, XHIDDEN, XLEVELS, XIDS, XDELAYED, XRES, XLEASES, XPROGRESS, XHELD
local XWAITING, XKEYED, XASTREAM, XAPART

-- The range of a reserved call's lease before its read (see `lease:<c>` above): its first entry
-- after its last, which `XPENDING` and `covers` read as no entry.
local UNREAD_FIRST, UNREAD_LAST = '0-1', '0-0'

-- jobs_core::DEFAULT_PRIORITY, whose jobs' entries leave out `pr` (streams.rs checks the two
-- agree).
local DEFAULT_PRIORITY = 10

-- The length of a job id at the start of `j` (streams/packed.rs).
local ID_LEN = 32

on_base(function()
  XSTREAM = BASE .. 'x'
  XRETURNED = BASE .. 'xr'
  XHIDDEN = BASE .. 'xhidden'
  XLEVELS = BASE .. 'xlevels'
  XIDS = BASE .. 'ids'
  XDELAYED = BASE .. 'xdelayed'
  XRES = BASE .. 'res'
  XLEASES = BASE .. 'leases'
  XPROGRESS = BASE .. 'progress'
  XHELD = BASE .. 'xheld'
  XWAITING = BASE .. 'xwaiting'
  XKEYED = BASE .. 'xkeyed'
  XASTREAM = BASE .. 'xa'
  XAPART = BASE .. 'xapart'
end)

-- The key of fetch call `call`'s lease.
local function call_lease(call)
  return BASE .. 'lease:' .. call
end

-- The key of delayed job `id`'s fields.
local function delayed_key(id)
  return BASE .. 'd:' .. id
end

-- Whether entry id `a` comes before entry id `b`.
local function entry_before(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, bm = tonumber(am), tonumber(bm)
  return am < bm or (am == bm and tonumber(as) < tonumber(bs))
end

-- Fetch call `call`'s lease: {call, worker, first and last entry, started, expiry, stream}
-- (the stream's whole key), or false once it is gone.
local function lease_of(call)
  local v = redis.call('HMGET', call_lease(call), 'w', 'f', 'l', 's', 'x', 'k')
  return v[1] and { call = call, worker = v[1], first = v[2], last = v[3], started = v[4],
    expiry = v[5], stream = BASE .. v[6] } or false
end

-- The leases of `worker`'s fetch calls (see `lease_of`).
local function leases_of(worker)
  local mine, found = worker .. '|', {}
  for _, member in ipairs(redis.call('ZRANGE', XLEASES, 0, -1)) do
    if string.sub(member, 1, #mine) == mine then
      local c = lease_of(string.sub(member, #mine + 1))
      if c then
        found[#found + 1] = c
      end
    end
  end
  return found
end

-- Whether lease `c` (see `lease_of`) holds entry `entry` of `stream`: its call read that
-- stream over a range that holds the entry.
local function covers(c, stream, entry)
  return c.stream == stream and not entry_before(entry, c.first)
    and not entry_before(c.last, entry)
end

-- The member of `reserved` (flow.lua) of entry `entry` of `stream`, leased beyond the queue's
-- concurrency.
local function reserved_member(stream, entry)
  return string.sub(stream, #BASE + 1) .. '|' .. entry
end

-- Acknowledges the entries of each stream of `acks` (stream -> entry ids), a few hundred at a
-- time: their jobs leave running, so a job with key limits (an entry of `xa`) no longer counts
-- against its key's concurrency, and a reserved one is reserved no more.
local function ack_all(acks)
  local reserved = redis.call('EXISTS', RESERVED) == 1
  for stream, entries in pairs(acks) do
    if reserved then
      for _, entry in ipairs(entries) do
        redis.call('ZREM', RESERVED, reserved_member(stream, entry))
      end
    end
    if stream == XASTREAM then
      for _, entry in ipairs(entries) do
        local got = redis.call('XRANGE', stream, entry, entry)[1]
        stop_running(got and field_of(got[2], 'k'))
      end
    end
    for from = 1, #entries, 500 do
      redis.call('XACK', stream, 'g', unpack(entries, from, math.min(from + 499, #entries)))
    end
  end
end

-- Creates `stream` and its group, unless they exist.
local function ensure_group(stream)
  if redis.call('EXISTS', stream) == 0 then
    redis.call('XGROUP', 'CREATE', stream, 'g', '0', 'MKSTREAM')
  end
end

-- The streams of priority `p` (the `pr` field's text; nil for the default): the queue's and
-- the returned jobs', and the prefix of their entries in the id map.
local function level(p)
  if not p then
    return XSTREAM, XRETURNED, ''
  end
  return XSTREAM .. ':' .. p, XRETURNED .. ':' .. p, p .. ':'
end

-- Whether `x` exists. A fetch's transaction hides it as `xhidden` and names it back; should
-- its last command have failed, `x` is named back here, before any call uses it.
local function x_exists()
  if redis.call('EXISTS', XSTREAM) == 1 then
    return true
  end
  if redis.call('EXISTS', XHIDDEN) == 1 then
    redis.call('RENAME', XHIDDEN, XSTREAM)
    return true
  end
  return false
end

-- Creates the streams of priority `p` (nil for the default), unless they exist; lists a `p`
-- among the priorities in use.
local function ensure_level(p)
  if not p then
    if not x_exists() then
      redis.call('XGROUP', 'CREATE', XSTREAM, 'g', '0', 'MKSTREAM')
    end
    ensure_group(XRETURNED)
    return
  end
  local queued, returned = level(p)
  ensure_group(queued)
  ensure_group(returned)
  redis.call('ZADD', XLEVELS, p, p)
end

-- Keeps a paused queue's group past the entries just added to `x` (see pause.lua).
local function hold_if_paused()
  if redis.call('EXISTS', XHELD) == 1 then
    redis.call('XGROUP', 'SETID', XSTREAM, 'g', '$')
  end
end

-- The run_at of the job of an entry's fields: the digits after the id in `j`, up to a `:`;
-- nil when `j` is malformed.
local function run_at_of(fields)
  return string.match(fields[2], '^(%-?%d+):', ID_LEN + 1)
end

-- Makes job `id`, with fields `kept` (`j` first, without `s`), pending in `xapart`, its fields
-- kept in `d:<id>`: a job with key limits (`k`), or one set aside.
local function wait_apart(id, kept)
  local p = tonumber(field_of(kept, 'pr')) or DEFAULT_PRIORITY
  redis.call('HSET', delayed_key(id), 's', 'p', unpack(kept))
  redis.call('ZADD', XAPART, p, ready_member(run_at_of(kept), id))
  redis.call('HSET', XIDS, id, 'd')
end

-- Adds job `id` to priority `p`'s stream of returned jobs when `ahead`, else its queue's, with
-- its fields `kept` (`j` first); points the id map at the entry. A job with key limits waits in
-- `xapart` instead, in its place whatever `ahead` says (see `wait_apart`). Returns whether
-- it added an entry.
local function add_entry(id, p, kept, ahead)
  if field_of(kept, 'k') then
    wait_apart(id, kept)
    return false
  end
  local queued, returned, prefix = level(p)
  if ahead then
    prefix = prefix .. 'r'
    queued = returned
  end
  local entry = redis.call('XADD', queued, '*', unpack(kept))
  redis.call('HSET', XIDS, id, prefix .. entry)
  if queued == XSTREAM then
    hold_if_paused()
  end
  return true
end

-- The stream and the entry id of an id map's value (for a job with an entry).
local function located(current)
  local p, rest = string.match(current, '^(%-?%d+):(.*)$')
  local queued, returned = level(p)
  if not p then
    rest = current
  end
  local kind = string.sub(rest, 1, 1)
  if kind == 'r' then
    return returned, string.sub(rest, 2)
  elseif kind == 'a' then
    return XASTREAM, string.sub(rest, 2)
  end
  return queued, rest
end

-- Every stream of the queue, in the order fetches read them: by priority, and in each the
-- returned jobs' before the queue's.
local function streams()
  local all = {}
  local default_done = false
  local levels = redis.call('ZRANGE', XLEVELS, 0, -1)
  for _, p in ipairs(levels) do
    if not default_done and tonumber(p) > DEFAULT_PRIORITY then
      table.insert(all, XRETURNED)
      table.insert(all, XSTREAM)
      default_done = true
    end
    local queued, returned = level(p)
    table.insert(all, returned)
    table.insert(all, queued)
  end
  if not default_done then
    table.insert(all, XRETURNED)
    table.insert(all, XSTREAM)
  end
  return all
end

-- Every stream whose entries may be pending for a worker: those of `streams`, then `xa` once a
-- job with key limits was taken.
local function held_streams()
  local all = streams()
  if redis.call('EXISTS', XASTREAM) == 1 then
    all[#all + 1] = XASTREAM
  end
  return all
end

-- The last entry of `stream` its group delivered ('0-0' before the first).
local function last_delivered(stream)
  for _, group in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
    if field_of(group, 'name') == 'g' then
      return field_of(group, 'last-delivered-id')
    end
  end
end

-- How many entries of `stream` are pending for `worker`.
local function pending_count(stream, worker)
  for _, consumer in ipairs(redis.call('XPENDING', stream, 'g')[4] or {}) do
    if consumer[1] == worker then
      return tonumber(consumer[2])
    end
  end
  return 0
end

-- Whether `stream` holds an entry its group has not delivered yet.
local function undelivered(stream)
  -- A stream that does not exist reads as empty, so its group is not asked for.
  local last = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)[1]
  return last ~= nil and entry_before(last_delivered(stream), last[1])
end

-- Whether the next entries a fetch leases are `x`'s: no stream before it in the order of
-- `streams` holds an undelivered entry, and `x` does when a stream after it could.
local function next_is_x()
  local all = streams()
  for k, stream in ipairs(all) do
    if stream == XSTREAM then
      return k == #all or undelivered(XSTREAM)
    end
    if undelivered(stream) then
      return false
    end
  end
  return false
end

-- Hides `x` from the `XREADGROUP` that follows fetch.lua in its transaction (fetched.lua names
-- it back).
local function hide_x()
  redis.call('RENAME', XSTREAM, XHIDDEN)
end

-- Writes fetch call `call`'s lease (key `lease`, its worker already in it): started now, until
-- `expiry`, over `n` entries of `stream` from `first` to `last`; and counts them running.
local function record_lease(lease, call, worker, expiry, stream, first, last, n)
  redis.call('HSET', lease, 's', NOW_S, 'x', expiry, 'f', first, 'l', last,
    'k', string.sub(stream, #BASE + 1))
  redis.call('ZADD', XLEASES, expiry, worker .. '|' .. call)
  recount_by('q', -n)
  recount_by('p', -n)
  recount_by('r', n)
end

-- The id of the job of an entry's fields (`j` first).
local function job_of(fields)
  return string.sub(fields[2], 1, ID_LEN)
end

-- `j` with its run_at replaced by `run_at`.
local function with_run_at(j, run_at)
  local colon = string.find(j, ':', ID_LEN + 1, true)
  return string.sub(j, 1, ID_LEN) .. run_at .. string.sub(j, colon)
end

-- The run_at and `m` packed in `j` (see streams/packed.rs: the id, the run_at, `:`, the length of
-- `m`, `:`, `m`, the payload), or nil when `j` is malformed.
local function unpack_j(j)
  local run_at, len, from = string.match(j, '^(%-?%d+):(%d+):()', ID_LEN + 1)
  if not run_at then
    return nil
  end
  return run_at, string.sub(j, from, from + tonumber(len) - 1)
end

-- The most attempts of the job of an entry's fields: the start of its `m`, inside `j`; nil
-- when `j` is malformed.
local function max_attempts_of(fields)
  return tonumber(string.match(fields[2], '^%-?%d+:%d+:(%d+)', ID_LEN + 1))
end

-- Fields `fields` (an entry's, or a delayed job's in any order) with `j` first and without
-- those named in `left_out`, followed by `more`.
local function with_j_first(fields, left_out, more)
  local kept = { 'j', field_of(fields, 'j') }
  for k = 1, #fields, 2 do
    local name = fields[k]
    if name ~= 'j' and not left_out[name] then
      kept[#kept + 1] = name
      kept[#kept + 1] = fields[k + 1]
    end
  end
  for _, value in ipairs(more) do
    kept[#kept + 1] = value
  end
  return kept
end

-- Makes job `id` pending again, or scheduled (`status` 's'), with `attempts` attempts made
-- and run_at `run_at`: a new entry when it is due (of `xr` when `ahead`, so that it keeps its
-- place), else in `xdelayed`. `fields` are its entry's, or its `d:<id>` hash's (in any order).
-- Returns whether it is ready now (an entry, or in `xapart`).
local function requeue(id, fields, attempts, run_at, status, ahead)
  local kept = with_j_first(fields, { a = true, s = true, c = true }, {})
  -- An entry without `c` was created at its run_at, which changes now.
  kept[#kept + 1] = 'c'
  kept[#kept + 1] = field_of(fields, 'c') or run_at_of(kept)
  if attempts > 0 then
    kept[#kept + 1] = 'a'
    kept[#kept + 1] = int(attempts)
  end
  kept[2] = with_run_at(kept[2], run_at)
  if tonumber(run_at) <= NOW then
    if add_entry(id, field_of(fields, 'pr'), kept, ahead) then
      recount_by('q', 1)
    end
    return true
  end
  redis.call('HSET', delayed_key(id), 's', status, unpack(kept))
  redis.call('ZADD', XDELAYED, run_at, id)
  redis.call('HSET', XIDS, id, 'd')
  return false
end

-- Takes job `id`, which waits in `d:<id>` with fields `fields`, out of `xdelayed` or `xapart`
-- (a job with key limits, or one set aside).
local function unready(id, fields)
  redis.call('ZREM', XDELAYED, id)
  local run_at = run_at_of({ 'j', field_of(fields, 'j') }) or 0
  redis.call('ZREM', XAPART, ready_member(run_at, id))
end

-- Adds up to `limit` delayed jobs that are due to their streams (or to `xapart`), as pending.
local function promote_due(limit)
  local due = redis.call('ZRANGE', XDELAYED, '-inf', NOW_S, 'BYSCORE', 'LIMIT', 0, limit)
  local entries = 0
  for _, id in ipairs(due) do
    local key = delayed_key(id)
    local fields = redis.call('HGETALL', key)
    if add_entry(id, field_of(fields, 'pr'), with_j_first(fields, { s = true }, {}), false) then
      redis.call('DEL', key)
      entries = entries + 1
    end
    if field_of(fields, 's') == 's' then
      recount('s', 'p')
    end
  end
  if #due > 0 then
    redis.call('ZREM', XDELAYED, unpack(due))
    recount_by('q', entries)
  end
end

-- The fence of the writes under a lease (complete, fail, release, renew, progress). From
-- ARGV[first], in steps of `step`: each job's fetch call, entry and id. A job holds its lease
-- while the id map names that entry for it, in the stream its call read, the call's lease is
-- there, and the job has not ended (`res` holds nothing for it). That is what the pending list
-- says, read from hashes:
-- - every write that takes an entry out of the pending list, in the same script, points the
--   id map at another entry (retry, release, rescue), sets `res` (completion, death) or
--   removes the job (prune); so the id map naming an entry of a job not ended means the entry
--   is pending;
-- - an entry is delivered once, to the call whose lease token names it, and a call's lease
--   goes only once none of its entries is pending (`drop_ended`, rescue); so a live call
--   named with a pending entry is the call that read it.
-- One HMGET of the id map, one of `res` and one per call; an `XPENDING` over the batch's range
-- (which listed the entries of every other call in it too) cost Redis about a quarter more
-- per drained job (docs/redis-streams.md). Returns per job its call's lease (see `lease_of`;
-- the stream is its entry's) or false, the leases by call id, and per job how it ended
-- (`res`) or false.
local function fenced(first, step)
  local ids = {}
  for i = first, #ARGV, step do
    ids[#ids + 1] = ARGV[i + 2]
  end
  local current = redis.call('HMGET', XIDS, unpack(ids))
  local ended = redis.call('HMGET', XRES, unpack(ids))
  local calls, held = {}, {}
  for n = 1, #ids do
    local i = first + step * (n - 1)
    local call, entry = ARGV[i], ARGV[i + 1]
    local c = calls[call]
    if c == nil then
      c = lease_of(call)
      calls[call] = c
    end
    held[n] = false
    local now_at = current[n]
    if c and now_at and not ended[n] then
      -- Most often the entry of the default priority's stream, which the map names bare: a
      -- comparison of two interned strings, where `located` matches a pattern.
      local stream, at = XSTREAM, now_at
      if now_at ~= entry then
        stream, at = located(now_at)
      end
      if at == entry and stream == c.stream then
        held[n] = c
      end
    end
  end
  return held, calls, ended
end

-- Drops the leases of `calls` (by id, as `fenced` gives them) none of whose entries is pending;
-- not a blocked read's reservation, whose jobs may run before adopt.lua writes their range.
local function drop_ended(calls)
  for call, c in pairs(calls) do
    if c and c.first ~= UNREAD_FIRST
      and #redis.call('XPENDING', c.stream, 'g', c.first, c.last, 1, c.worker) == 0 then
      redis.call('DEL', call_lease(call))
      redis.call('ZREM', XLEASES, c.worker .. '|' .. call)
    end
  end
end

-- Lists entry `entry` of `stream` in `acks` (stream -> entry ids), to be acknowledged.
local function to_ack(acks, stream, entry)
  local listed = acks[stream]
  if not listed then
    listed = {}
    acks[stream] = listed
  end
  listed[#listed + 1] = entry
end

-- Ends the leases a write let go: acknowledges the entries of `acks` (see `to_ack`), drops the
-- calls of `calls` left without a pending entry, and wakes the workers when `woken` (a job was
-- added to a stream).
local function let_go(acks, calls, woken)
  if next(acks) then
    ack_all(acks)
    drop_ended(calls)
  end
  if woken then
    wake()
  end
end

-- Records the error of attempt `attempt` of job `id` (`report`: JSON written by jobs-core).
local function record_error(id, attempt, report)
  redis.call('RPUSH', side_key('e', id),
    '{"a":' .. int(attempt) .. ',"t":' .. NOW_S .. ',' .. string.sub(report, 2))
end

-- Takes unique key `key` for job `id`, unless another active job holds it: returns that job's
-- id then, else nil.
local function hold_unique(key, id)
  local holder = redis.call('HGET', UNIQUE, key)
  if holder and holder ~= id then
    return holder
  end
  redis.call('HSET', UNIQUE, key, id)
  redis.call('HSET', XKEYED, id, key)
  return nil
end

-- Frees the unique keys that jobs `ids`, which ended, held (most hold none: one `EXISTS` when no
-- active job of the queue holds a key).
local function free_unique(ids)
  if #ids == 0 or redis.call('EXISTS', XKEYED) == 0 then
    return
  end
  for from = 1, #ids, 500 do
    local part = { unpack(ids, from, math.min(from + 499, #ids)) }
    for k, key in ipairs(redis.call('HMGET', XKEYED, unpack(part))) do
      if key then
        redis.call('HDEL', XKEYED, part[k])
        if redis.call('HGET', UNIQUE, key) == part[k] then
          redis.call('HDEL', UNIQUE, key)
        end
      end
    end
  end
end

-- Ends job `id`, started at `started`, as dead; frees its unique key.
local function bury(id, started)
  redis.call('HSET', XRES, id, 'd|' .. started .. '|' .. NOW_S .. '|')
  redis.call('ZADD', DEAD, '0', id)
  free_unique({ id })
end

-- The attempts made of the job of entry fields `fields` once its current one ends.
local function attempts_after(fields)
  return (tonumber(field_of(fields, 'a')) or 0) + 1
end

-- The fields of entry `entry` of `stream`, or nil when the stream no longer holds it.
local function entry_fields(stream, entry)
  local got = redis.call('XRANGE', stream, entry, entry)
  return got[1] and got[1][2]
end

-- The loop of the writes that end an attempt (fail, release): for each job whose lease holds
-- (see `fenced`, with its `first` and `step`), its entry listed to be acknowledged, calls
-- `write(i, h, fields)` with its first argument's index, its lease and its entry's fields.
-- Returns a digit per job, 1 (written) or 0, the entries to acknowledge and the calls, for
-- `let_go`.
local function each_ended(first, step, write)
  local held, calls = fenced(first, step)
  local acks, out = {}, {}
  for n, h in ipairs(held) do
    local i = first + step * (n - 1)
    local fields = h and entry_fields(h.stream, ARGV[i + 1])
    if fields then
      to_ack(acks, h.stream, ARGV[i + 1])
      write(i, h, fields)
      out[n] = '1'
    else
      out[n] = '0'
    end
  end
  return out, acks, calls
end

-- The lease of running entry `entry` of `stream`: the call of its worker that read the stream
-- over a range that holds it (see `lease_of`), or nil; and its worker, or nil when no worker
-- holds the entry.
local function running_lease(stream, entry)
  local held = redis.call('XPENDING', stream, 'g', entry, entry, 1)[1]
  if not held then
    return nil, nil
  end
  for _, c in ipairs(leases_of(held[2])) do
    if covers(c, stream, entry) then
      return c, held[2]
    end
  end
  return nil, held[2]
end

-- What the queue holds of job `id`, whose value in the id map is `current`: nil when its
-- entry is gone, else {status (code), fields (its entry's, or its `d:<id>` hash's, `j` among
-- them), ended (its value in `res`) or false, and for a job with an entry its stream and
-- entry}. A job waits in `d:<id>` (its status in its fields) while it is delayed, and once it
-- is cancelled before it ran; an entry's job has ended when `res` says how, and runs while a
-- worker holds the entry.
local function job_state(id, current)
  local ended = redis.call('HGET', XRES, id) or false
  if current == 'd' then
    local fields = redis.call('HGETALL', delayed_key(id))
    return { status = field_of(fields, 's'), fields = fields, ended = ended }
  end
  local stream, entry = located(current)
  local fields = entry_fields(stream, entry)
  if not fields then
    return nil
  end
  local status
  if ended then
    -- A dead or cancelled job's mark is one letter; a completed one's, its lease's 16 digits.
    status = string.match(ended, '^([dx])|') or 'c'
  elseif redis.call('XPENDING', stream, 'g', entry, entry, 1)[1] then
    status = 'r'
  else
    status = 'p'
  end
  return { status = status, fields = fields, ended = ended, stream = stream, entry = entry }
end

-- Whether job state `state` (see `job_state`) matches filter `f` (nil matches every job), by
-- filter.lua's rule.
local function state_matches(state, f)
  if not f then
    return true
  end
  local fields = state.fields
  -- A corrupt `j` matches no name and no creation time.
  local run_at, m = unpack_j(field_of(fields, 'j') or '')
  local finished = state.ended and string.match(state.ended, '^[^|]*|[^|]*|([^|]*)|')
  return job_matches(f, state.status, m or '', field_of(fields, 'c') or run_at, finished,
    function(tag)
      local ok, tags = pcall(cjson.decode, field_of(fields, 'tg') or '[]')
      for _, t in ipairs(ok and type(tags) == 'table' and tags or {}) do
        if t == tag then
          return true
        end
      end
      return false
    end)
end

-- A new job's coalesce spec (the last part of its shape, see `store_entries`) as its mode ('t'
-- throttle or 'd' debounce), window (µs) and key; nil when it has none.
local function coalesce_of(spec)
  if spec == '' then
    return nil
  end
  local mode, window, key = string.match(spec, '^([td])(%d+):(.*)$')
  return mode, tonumber(window), key
end

-- Folds a debounced job into the waiting job `holder`: the new job's `j` after its id (its
-- run_at, `m` and payload) and its version (among its other fields, ARGV[from..last]) replace
-- the holder's, which then waits until that run_at.
local function fold_into(holder, j, from, last)
  local key = delayed_key(holder)
  local folded = holder .. string.sub(j, ID_LEN + 1)
  redis.call('HSET', key, 'j', folded)
  local version = nil
  for f = from, last, 2 do
    if ARGV[f] == 'v' then
      version = ARGV[f + 1]
    end
  end
  if version then
    redis.call('HSET', key, 'v', version)
  else
    redis.call('HDEL', key, 'v')
  end
  redis.call('ZADD', XDELAYED, run_at_of({ 'j', folded }), holder)
end

-- How many of the jobs of ARGV[first..] (as `store_entries` reads them) it would store: those
-- for which no active job holds the unique key, no throttle window's first job or waiting
-- debounced job answers, and no earlier job of the call took the coalesce key.
local function new_entries(first)
  local new, taken, i = 0, {}, first
  while i <= #ARGV do
    local shape = ARGV[i]
    if shape == '' then
      new = new + 1
      i = i + 2
    else
      local run_at, count, keyed, spec = string.match(shape, '^([^|]*)|[^|]*|(%d+)|(u?)k?|(.*)$')
      local mode, _, key = coalesce_of(spec)
      local held = mode and (taken[mode .. key] or coalesce_holder(mode, key, delayed_key))
      if not held and keyed ~= '' then
        local holder = redis.call('HGET', UNIQUE, ARGV[i + 3])
        held = holder and holder ~= string.sub(ARGV[i + 1], 1, ID_LEN)
      end
      if not held then
        new = new + 1
        -- A debounced job takes folds only while it waits in `xdelayed`.
        if mode == 't' or (mode == 'd' and run_at ~= '') then
          taken[mode .. key] = true
        end
      end
      i = i + 2 + tonumber(count)
    end
  end
  return new
end

-- Stores the jobs of ARGV[first..]: per job its shape, its `j` (the job's id leads it, its run_at
-- follows, see streams/packed.rs), then its entry's other fields, names and values. The shape is ''
-- for a job due now, of the default priority and without other fields, else
-- `<run_at>|<priority>|<n>|<u><k>|<coalesce>`: its run_at when it is not due yet (else ''), its
-- priority when it is not the default (else ''), the number n of values after `j`, `u` when the
-- first of them is its unique key's (`u` and the key; else ''), `k` when it has key limits
-- (among those values, as `k`; a job due now then waits in `xapart`), and how it coalesces with an
-- earlier job of its key (`t` throttle or `d` debounce, the window in microseconds, `:`, the key;
-- else ''). A job due now is an entry of its priority's stream, a later one waits in `xdelayed`,
-- scheduled. A job whose unique key another active job holds, or whose coalesce key's job answers
-- for it (a throttle window's first job, a debounce key's job while it waits, into which it folds:
-- see `fold_into`), is not stored. `mode` says what to do when the queue has a max depth, as
-- store.lua's modes do ('s', 'p' or 'c'); a bounded queue's depth counts only the jobs that
-- would be stored (see `new_entries`). Returns store.lua's answer: its code, the max depth and a
-- {index in the call (from 1), holder} pair for each job not stored so. Wakes the
-- queue's workers when no entry waited for them (`q`): a worker sleeps only after a fetch found
-- none; but not when every job went to `x` while a blocked read of it is under way (`xwaiting`, see
-- wait.lua): the `XADD` serves the read, and a worker whose read took jobs fetches before it sleeps
-- again.
local function store_entries(first, mode)
  local md = redis.call('HGET', LIMITS, 'md')
  if md and mode == 'p' then
    return answer('bounded', md, {})
  end
  if md and overfills(md, new_entries(first)) then
    return answer('full', md, {})
  end
  if mode == 'c' then
    return answer('ok', md, {})
  end
  local seen, ids, n, ready, later, i = {}, {}, 0, 0, 0, first
  -- The call's index of the job at ARGV[i], and the jobs not stored.
  local index, duplicates = 0, {}
  -- The ready jobs of another stream than `x`, which no blocked read takes, and those with key
  -- limits, which wait in `xapart` for a fetch.
  local elsewhere, keyed_ready = 0, 0
  local woken = (tonumber(redis.call('HGET', COUNTS, 'q')) or 0) > 0
  ensure_level(nil)
  while i <= #ARGV do
    local shape, j = ARGV[i], ARGV[i + 1]
    local id = string.sub(j, 1, ID_LEN)
    index = index + 1
    if shape == '' then
      -- Most jobs: due now, of the default priority, `j` alone; the loop's fast path.
      ids[n + 1], ids[n + 2] = id, redis.call('XADD', XSTREAM, '*', 'j', j)
      n = n + 2
      ready = ready + 1
      i = i + 2
    else
      local run_at, priority, count, keyed, limited, spec =
        string.match(shape, '^([^|]*)|([^|]*)|(%d+)|(u?)(k?)|(.*)$')
      local p, last = nil, i + 1 + tonumber(count)
      local mode, window, coalesce_key = coalesce_of(spec)
      -- A debounce key's job waits while it is in `xdelayed`: once it is an entry of a
      -- stream, which cannot change, the next job takes the key.
      local holder = mode and coalesce_holder(mode, coalesce_key, delayed_key)
      if holder then
        if mode == 'd' then
          fold_into(holder, j, i + 2, last)
        end
      elseif keyed ~= '' then
        holder = hold_unique(ARGV[i + 3], id)
      end
      if holder then
        duplicates[#duplicates + 1] = { index, holder }
      else
        if priority ~= '' then
          p = priority
          if not seen[p] then
            ensure_level(p)
            seen[p] = true
          end
        end
        ids[n + 1] = id
        if run_at == '' and limited ~= '' then
          wait_apart(id, { 'j', j, unpack(ARGV, i + 2, last) })
          ids[n + 2] = 'd'
          keyed_ready = keyed_ready + 1
        elseif run_at == '' then
          local queued, _, prefix = level(p)
          ids[n + 2] = prefix .. redis.call('XADD', queued, '*', 'j', j, unpack(ARGV, i + 2, last))
          ready = ready + 1
          if p then
            elsewhere = elsewhere + 1
          end
        else
          redis.call('HSET', delayed_key(id), 's', 's', 'j', j, unpack(ARGV, i + 2, last))
          redis.call('ZADD', XDELAYED, run_at, id)
          ids[n + 2] = 'd'
          later = later + 1
        end
        if mode then
          hold_key(mode, coalesce_key, window, id)
        end
        n = n + 2
      end
      i = last + 1
    end
  end
  bulk('HSET', XIDS, ids, 1000)
  if ready > 0 then
    hold_if_paused()
  end
  if not woken and (keyed_ready > 0
      or (ready > 0 and (elsewhere > 0 or redis.call('HLEN', XWAITING) == 0))) then
    wake()
  end
  recount_by('q', ready)
  recount_by('p', ready + keyed_ready)
  recount_by('s', later)
  return answer('ok', md, duplicates)
end
