-- The prefix's keys of live workers (for the presence scripts, whose BASE is `{prefix}:`).
-- workers:      zset, score when the worker is forgotten unless it beats again, member its id
-- worker-info:  hash, worker id -> its description (JSON, as `WorkerInfo` serializes)
-- liveness:     hash, worker id -> the client name of its liveness connection (see liveness.rs)
local WORKERS, INFO, LIVENESS
on_base(function()
  WORKERS = BASE .. 'workers'
  INFO = BASE .. 'worker-info'
  LIVENESS = BASE .. 'liveness'
end)
