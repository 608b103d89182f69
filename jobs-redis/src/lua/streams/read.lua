-- Reads job ARGV[4]: nil when the queue does not hold it, else {its entry id (`d` while it
-- waits in `d:<id>`, see `job_state`), its fields (a `d:<id>` job's with its status `s`), how
-- it ended (see `res`) or false, its errors, its progress or false, then for a running job its
-- worker, its fetch call's id, its start and its expiry}.
local id = ARGV[4]
local current = redis.call('HGET', XIDS, id)
local state = current and job_state(id, current)
if not state then
  return nil
end
local errors = redis.call('LRANGE', side_key('e', id), 0, -1)
local progress = redis.call('HGET', XPROGRESS, id) or false
local read = { state.entry or 'd', state.fields, state.ended, errors, progress }
if state.status ~= 'r' then
  return read
end
local c, worker = running_lease(state.stream, state.entry)
read[6] = worker
if c then
  read[7] = c.call
  read[8] = c.started
  read[9] = redis.call('HGET', call_lease(c.call), state.entry) or c.expiry
end
return read
