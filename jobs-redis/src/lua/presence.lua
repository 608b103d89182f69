-- The prefix's keys of live workers (for the presence scripts, whose BASE is `{prefix}:`).
-- workers:      zset, score when the worker is forgotten unless it beats again, member its id
-- worker-info:  hash, worker id -> its description (JSON, as `WorkerInfo` serializes)
local WORKERS = BASE .. 'workers'
local INFO = BASE .. 'worker-info'
