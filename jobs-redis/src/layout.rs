//! How the backend lays out its data in Redis, what each operation costs, and why: the
//! internals behind the crate docs (this module holds no code).
//!
//! # Layout
//!
//! Every key of a queue starts with the hash tag `{<prefix>:<queue>}`, so each script touches a
//! single cluster slot. A job is a hash `{p:q}:j:<id>` of short fields (see the `record`
//! module's table), small enough for Redis' compact listpack encoding, its payload among them
//! when it fits in two values of 64 bytes (else in `{p:q}:p:<id>`), a result over 64 bytes in
//! `{p:q}:r:<id>` and its errors in the list `{p:q}:e:<id>`. (A job stored while every payload
//! had a key of its own reads as before; a worker of that earlier layout cannot read a payload
//! kept in the hash, so on a store shared across that change, workers upgrade first.) The queue keeps sorted sets of ready jobs (scored by priority, members
//! `hex(run_at) ‖ id`, so Redis' own order is exactly priority → run_at → FIFO, ids being
//! UUIDv7s), delayed jobs (by run_at; each fetch first promotes the due ones, which become
//! pending), leases (by expiry, for rescue), finished jobs (by finish time, for retention, see
//! below), dead jobs and all jobs (both by id, for `list`), plus hashes of counts per status,
//! held unique keys and cron ticks. A fetch across several queues peeks at each queue's head,
//! then leases from each the share that the merged order gives it.
//!
//! The finished (completed and cancelled) jobs are kept for retention in the sorted set
//! `{p:q}:done` a call at a time: a member is the ids of the jobs one call finished, one after
//! the other (32 hex digits each), scored by when they finished, which is each job's `f` field.
//! A completion of 500 jobs so adds one member of 16,000 bytes rather than 500 entries: the
//! set costs about 36 bytes per retained job rather than 136, and a completion one `ZADD` per
//! call rather than a member per job (about 1 µs of Redis CPU per job, 7 % of the drain). What
//! reads the set goes by members: prune takes the oldest member, removes its jobs in order and
//! puts back what its limit left; the count of jobs finished since a time sums the lengths of
//! the members since then (so it reads those ids, bounded by the retention); a job that leaves
//! (retried, deleted) is found in the members of its own finish time and cut out of its
//! member. A member of one id, as the earlier layout kept every finished job, reads the same.
//! (A worker of that earlier layout would prune a member of many ids as one id, leaving its
//! jobs unpruned, and retry a cancelled job without taking it out of its member, which prune
//! then skips, as a job that did not finish then: on a store shared across that change,
//! upgrade every process that prunes or manages jobs together.)
//!
//! A job's payload version is stored with it in the hash's `v` field, written only for a
//! version other than 1 and read back as 1 when absent: every job stored before versions
//! existed is of version 1, and so is nearly every job, so a bulk enqueue of version-1 jobs
//! sends and stores nothing more (a job of another version costs one field of its `HSET`, about
//! ten bytes on the wire and a few in the listpack). A debounced job that folds into a waiting
//! one carries its version over with its payload.
//!
//! A job's tags are stored with it (the hash's `tg` field, absent when it has none) and indexed
//! per queue in the sorted set `{p:q}:tag:<tag>` of its ids (score 0, so `ZRANGEBYLEX` pages it
//! by id). The scripts that remove jobs (delete, prune) remove their index entries in the same
//! script, so an index holds no job that is gone and retention bounds the indexes too.
//!
//! A workflow step is stored with its job: the hash's `wf` field holds the step as JSON, and
//! is written only for a step, so an ordinary job stores, sends and costs exactly what it did
//! before. A step with slots to fill is stored with status `w` (counted in `counts`, listed
//! through `all`, in no ready or delayed set, so never fetched). The scripts that end a job
//! already read its fence with one `HMGET` (complete) or its attempt (fail, rescue): `wf` is
//! one more field of it, so a job without a step costs them nothing more. For a step they
//! apply its effects in the same call (effects.lua): a delivery writes the finishing job's
//! result, as the raw text it came as, in the waiting job's `i<slot>` (once: `HSETNX`) and
//! counts it in `wn`, and the last one makes the job pending, due now, in its ready set, and
//! publishes its queue's wake-up; a cancel ends a waiting, scheduled or pending job as
//! cancelled. A batch that holds steps is never split: its jobs of one queue go in one call,
//! and on one server the jobs of all its queues in one call of enqueue_all.lua, which checks
//! every queue's max depth before it stores any. The effects and enqueue_all.lua reach other
//! queues' keys, which only one server allows: on a cluster the enqueue refuses steps whose
//! effects leave their own queue.
//!
//! An idle worker takes a new job without fetching it (a worker of one queue; one of several is
//! woken and fetches, as before). Its fetch that finds nothing offers the worker's idle places: the
//! sorted set `{p:q}:idle` of workers by how long their offers stand (the lease's length), and the
//! hash `{p:q}:idle:<worker>` of the places left, the fetch's token prefix, the lease's length, the
//! worker's delivery channel and the names and versions it runs. An enqueue of one job that finds
//! the ready set empty, in a queue without a concurrency or a rate and not paused (the fields `lm`
//! and `pz` of `{p:q}:limits`, read with the max depth in one `HMGET`), looks at the first offers
//! standing: the first whose worker runs the job takes it, leased as a fetch leases it (running,
//! attempt counted, in the running set) under the offer's next token, and published on the worker's
//! channel (`<prefix>:deliver:<id>`, one per backend instance, heard on the wake-up connection) as
//! the job's hash before the lease and its payload, which the worker decodes as a fetch's answer.
//! So the job starts one hop after its enqueue, rather than after a wake-up, a fetch and its
//! answer. The offer's lease runs from the worker's clock at its last fetch at the earliest,
//! whatever the enqueuing client's clock says. A fetch of the worker that finds nothing again keeps
//! the offer standing, its places recounted as the worker's idle places less the deliveries made
//! that the worker has not heard of (its fetch says how many of the offer's it heard), so that no
//! place counts twice; one that leases jobs withdraws it, and so do a fetch across queues, the
//! rescue of a gone worker's jobs and the offer's time running out. A payload over 64 KiB is not
//! delivered (it waits to be fetched), so no delivery fills a subscriber's output buffer, and an
//! instance offers nothing while its subscription reconnects. A stopping worker withdraws its
//! offers with a script that then publishes a mark on its channel, and waits for that mark: Redis
//! sends a channel's messages in order, so by then it holds every job delivered to it, and hands
//! them back with its other leases. A job whose worker has no subscription left in the backend is
//! handed back at once; a delivery lost with the connection is rescued when its lease lapses, as a
//! dead worker's jobs are. Under load the ready set is never empty, so enqueues pay nothing for
//! this (one `ZRANGEBYSCORE` more only when the set is empty), and a fetch pays an `HMGET` of
//! the worker's offer.
//!
//! A job that does not decode (its payload key holds text that is not JSON, say, written by
//! another program) is decoded per job: the fetch that leases it fails it at once as dead with
//! an error of kind `decode` ("stored job … is corrupt: …") under the token it drew for it, and
//! returns the rest of its batch. `read` and `list` show such a payload as a JSON string holding
//! its raw text, so the job can be inspected, repaired and retried, or deleted.
//!
//! The operations that name only a job id find its queue among the queues this backend has
//! seen and the registry set `{<prefix>}:queues` (written with a backend's first enqueue to a
//! queue, and again at most every 10 s, so that a flushed registry comes back): no per-job index
//! is kept, so enqueue and fetch pay nothing for it, at the price of one request per queue for
//! `read` and `manage` by id. Writes under a lease carry only the id and the token, so every
//! token embeds a hash of its queue's name.
//!
//! Lists and bulk operations by filter find their jobs with the scan script, which walks in id
//! order the narrowest set of a queue that holds them all: the tag's index when the filter names
//! a tag, the dead set for dead jobs, the running set (read whole and sorted: it holds only the
//! jobs that workers run) for running ones, else every job; it checks the rest of the filter on
//! each job's hash and examines at most 2,000 jobs per call, so a call never blocks Redis for
//! long. Across queues, each queue is scanned and the ids merged. A bulk operation then changes
//! the jobs found (at most its limit) with one manage script call per queue, which checks each
//! job against the filter again, since it may have changed in between.
//!
//! Workers and schedules are kept in keys of the prefix, under the hash tag `{<prefix>}`: the
//! sorted set `{p}:workers` of worker ids scored by when each is forgotten, beside the hash
//! `{p}:worker-info` of their descriptions (every heartbeat drops the expired ones), and the
//! hash `{p}:schedules` of schedules by name; a schedule's last tick is read from the `cron`
//! hash of its queue. The catalog of job types is the hash `{p}:types`, field `name|version`
//! (the version last, so a name may hold any character), value the published type as JSON:
//! a worker publishes its types at start in one `HSET`, and `job_types` reads it in one
//! `HGETALL`, sorting by name then version. The hash `{p}:liveness` maps each worker to the client name of the
//! connection it keeps open (see the `liveness` module): a worker recorded there whose name
//! `CLIENT LIST` (asked of every node of a cluster) no longer shows is gone, and the others
//! rescue its jobs at once. The set `{p}:paused` names the paused queues, which every worker
//! reads every half second. The string `{p}:layout` names this layout, `hash` (see the
//! `marker` module), which each backend reads once, before its first call; a store laid out on
//! Redis Streams (`layout=streams`, the `streams` module) is named `streams`.
//!
//! A fetch names the jobs its worker runs: each name with the newest payload version it runs
//! (sent as pairs after the script's other arguments). While the head of the ready set holds
//! only jobs of those names at those versions or older (the usual case), the fetch takes it as
//! before; a job of another name, or of a newer version, is left in its place, untouched, and
//! the fetch looks past it, examining at most 1,000 ready jobs per call. The name and version
//! are read from the `HGETALL` the fetch does anyway (`m` and `v`), so this costs no command.
//! During a rolling deploy the newer release's jobs so wait for a newer worker; an older worker
//! that found nothing it runs sleeps until a wake-up or its poll interval, and since an enqueue
//! into a ready set that is not empty publishes no wake-up, it may pick up its own jobs only at
//! the poll interval while stranded jobs wait ahead of them. A fetch that knows no job at all
//! takes none and sends nothing.
//!
//! A starting worker counts the waiting and running jobs of its names by stored version
//! (`stored_versions`): the versions script walks each queue's delayed, ready, keyed-ready and
//! running sets in turn, at most 1,000 jobs per call (an `HMGET` of `s`, `m` and `v` each,
//! counted inside Redis, so only the counts come back), from a cursor it hands back: the score
//! and member of the last job it counted, found again by a binary search over the set's order
//! rather than by index, so that jobs fetched from the head meanwhile shift nothing. The queues
//! (each in its own slot) are walked side by side. A job that moves between sets during the
//! walk may be counted twice or missed; on a queue at rest the counts are exact.
//!
//! # Flow control
//!
//! A queue's limits are stored twice by `set_limits`: as JSON in the hash `{p}:limits` (queue ->
//! limits), which `flow` reads in one round trip with the set `{p}:keyed` of the queues that
//! received jobs with key limits (an enqueue of such jobs adds their queues, beside its script
//! calls), and its max depth alone in the queue's own hash `{p:q}:limits` (field `md`). Every
//! other flow key is a key of the queue, in its slot:
//!
//! - `{p:q}:kready`: the ready jobs that carry key limits (their `k` field), kept apart from
//!   `ready` so that a plain fetch (`ZPOPMIN` of `ready`) never meets them. Every script that
//!   makes a job ready picks the set by the job's `k` field.
//! - `{p:q}:krun`: a hash key -> running jobs of that key. The fetch adds; every script that
//!   moves a job out of running subtracts (complete, fail, release, rescue, and cancel or delete
//!   in manage), removing a key at 0. A queue's own running jobs are its `running` set.
//! - `{p:q}:reserved`: the running jobs leased beyond the queue's concurrency
//!   (`FetchParams::reserve`), which it does not count: a sorted set scored by lease expiry, as
//!   `running`, and renewed with it. Every script that moves a job out of running takes it out
//!   too; a fetch's count drops the entries whose expiry has passed (which counts their jobs
//!   again, so the limit holds whatever wrote them).
//! - `{p:q}:places`: a hash worker -> the places under the queue's concurrency that the
//!   worker's promoted jobs hold (reserved jobs handed the place of an ended one), which the
//!   count adds (`Backend::hold_places`, places.lua). A rescue of gone workers' jobs drops
//!   their fields.
//! - `{p:q}:starts` and `{p:q}:kstarts:<key>`: sliding logs of starts, for a queue's rate and
//!   for each key whose limits have a rate: one entry per fetch batch (score the fetch's time,
//!   member its token prefix and the count). A fetch counts the entries inside the window
//!   (dropping the older ones) and leases at most what the rate leaves; a log expires a minute
//!   after its window.
//! - `{p:q}:th:<key>`: the job a throttle key keeps, with the end of its window (`until:id`),
//!   expiring a minute after it; `{p:q}:debounce`: a hash debounce key -> the job that took it
//!   last, which holds it while it waits (its status is checked on each enqueue with the key).
//!
//! A fetch gets from the worker what `flow` told it of the queue. With nothing (the usual
//! case) it runs as before; when it leased fewer jobs than asked it also looks (one `ZCARD`)
//! whether keyed jobs wait, and if so takes them within their keys' limits, so a worker that
//! has not yet heard of a keyed queue still runs its jobs, never beyond their limits. With
//! limits or keyed jobs it caps the batch by the queue's concurrency (`ZCARD` of running) and
//! rate (its log), then walks `ready` and `kready` merged in order, reading each candidate's
//! hash: a job whose key is at its concurrency or rate (its running count, its log, plus what
//! this batch granted the key) is skipped and stays in its place, its attempt unspent; the walk
//! looks past at most 1,000 such jobs (and 1,000 of names the worker does not run) per call.
//! A fetch across queues peeks with the same rules, so it never picks jobs the leases would
//! refuse.
//!
//! Enqueue reads the max depth with one `HGET` in its script; for a bounded queue it first
//! decides each job's fate (new, duplicate by unique key or throttle, folded into a debounce
//! key's waiting job), and refuses the whole call, storing nothing, when the new jobs would take
//! the pending and scheduled count beyond the bound. How batches larger than one call, or
//! spread over queues, keep that whole is told in the `enqueue` module. Jobs without key limits
//! or a coalesce key carry an empty flow argument and take the path they took before.
//!
//! # Round trips
//!
//! Every operation of the hot path is one round trip: one `FCALL` per queue, all sent together
//! (the registry `SADD`, when due, goes with them). Enqueueing a batch sends its jobs in script calls of 500;
//! a fetch of up to n jobs from one queue is one call (two across several queues: a peek at each
//! head, then the leases); completing or failing a batch one; renewing every lease a worker
//! holds one per renewal period. A list takes a scan call per queue (more when a filter makes it
//! examine over 2,000 jobs), then one pipelined read per queue; a bulk operation the scans, then
//! a manage call per queue and 500 jobs. The scripts are functions of one library, loaded only
//! when a server lacks it (see the `scripts` module), and their arguments are packed straight
//! into the command.
//!
//! Inside Redis, the hot scripts keep the commands per job few, sending whatever concerns the
//! whole batch as one command with many members:
//!
//! - enqueue: per job one `HSET` (status, times, priority, run_at, `m`, the payload when it
//!   fits, and `v` for a version other than 1), and nothing else for a plain job (no flow, no
//!   field beyond those: no unique key, tags, trace context or step), whose Lua skips every
//!   lookup the others need (about 0.6 µs a job, 8 % of a bulk enqueue); per call the `HGET`
//!   of the queue's max depth, `ZMSCORE` of the set of all jobs (which ids exist), `MSET` of
//!   the payloads too long for the hash, `ZADD` to all jobs and to ready or delayed, `HINCRBY`
//!   of the counts, and `ZCARD` of ready with `PUBLISH` only if it was empty (see below);
//! - fetch: per job `HGETALL` and `HSET` (the lease); per call the due delayed jobs'
//!   `ZRANGEBYSCORE`, `ZRANGE` and `ZREM` of the ready jobs taken (`ZPOPMIN` for a fetch that
//!   takes every job, naming none), `ZADD` to running, `MGET` of the payloads not in their
//!   hash, `HINCRBY`, and when it
//!   leased fewer jobs than asked, the `ZCARD` of the keyed ready jobs;
//! - complete: per job `HMGET` (the fence) and `HSET`; per call `ZREM` from running, `ZADD` of
//!   one member to done, `HINCRBY`; a refused job one more `HMGET` (whether it repeats the
//!   completion that applied).
//!
//! A tagged job costs its enqueue one `ZADD` per tag, and its removal one `ZREM` per tag. A
//! job whose payload version is not 1 costs its enqueue one field-value pair more in its
//! `HSET`, and its fetch nothing (the version is in the hash it reads).
//!
//! `stored_versions`, once per worker start, costs per queue one script call per 1,000 waiting
//! or running jobs (at least one), each with one `HMGET` per job and, past the first, about
//! 2 + log2(size of the set) commands to find its cursor again.
//!
//! A single enqueue takes six commands (the max depth's `HGET`, `ZADD NX` all, which also
//! tells whether the id exists, `HSET`, `ZCARD` and `ZADD` ready, `HINCRBY`), seven when it
//! publishes, one more (`SET`) for a payload too long for the hash. On the wire a job costs
//! about 240 bytes to enqueue in bulk (about 370 alone, with the call's own arguments). A fetch
//! sends back one JSON array: per job the hash as it was before the lease (the caller knows
//! what the lease wrote), the payload when the hash does not hold it, and the errors if any; a
//! completion sends back one digit.
//!
//! # Wake-ups
//!
//! Scripts `PUBLISH` the queue's name on `<prefix>:wake` when jobs become ready. A worker sleeps
//! only after a fetch found the queue's ready set empty, so an enqueue publishes only when it
//! adds to an empty ready set: under load, with the set seldom empty, enqueues cost no fan-out
//! to the listening workers. Jobs made ready any other way (a retry, a release, a rescue)
//! always publish, and so does a fetch that promotes due delayed jobs and leaves some of them
//! for other workers. One listener task per backend (started by the first `subscribe`) relays
//! the signals to the workers, reconnects by itself and then wakes every worker, since it may
//! have missed signals. Delayed jobs become ready when a fetch promotes them: idle workers
//! fetch at their poll interval. Should a signal be lost without the listener noticing (a
//! cluster node that stops relaying while its connection stays open), the next enqueues do not
//! repair it while the ready set is not empty: the queue's idle workers catch up at their poll
//! interval.
//!
//! # Persistence
//!
//! Redis keeps jobs only as durably as it is configured to. Without persistence (no RDB
//! snapshots, no AOF) a restart loses every job, lease, unique key, cron tick and registered
//! queue: workers reconnect and go on with the jobs enqueued after the restart, but what was
//! waiting or running before is gone, and a worker's late writes for such jobs are refused. With
//! `appendonly yes` and `appendfsync everysec`, at most about a second of changes is lost.
//!
//! # Memory
//!
//! Measured with `MEMORY USAGE` on Redis 7.0: a waiting job's hash with a 43-byte payload
//! takes about 230 bytes, with a 104-byte one (in two values) about 300, and a completed one's
//! (with a short result) about 360 (its lease fields are emptied rather than deleted, which
//! saves a command per completion, but for a 16-digit mark of the token it was completed
//! under, kept so that a repeated completion is recognised); a payload too long for the hash
//! takes a key of about 260 bytes beside a hash of about 180. All in, with the sorted sets'
//! overhead, a waiting job of the benchmark (a 70-byte payload) costs about 610 bytes of
//! `used_memory` and a retained completed one about 525 (790 while every payload had a key of
//! its own, 635 while the finished jobs' set kept an entry per job: W4's million retained jobs
//! took 615 MB of `used_memory` then, 510 MB now). Values over 64 bytes stay out of the hash,
//! so it keeps the listpack encoding under Redis' default `hash-max-listpack-value`; a
//! hashtable-encoded job would take over 1 KB (a job name over about 50 bytes, a unique key,
//! trace context or tags' JSON array over 64, would cause it). Retention bounds the total:
//! completed and cancelled jobs are pruned by count and age per queue (by default the newest
//! 10,000 of the last 24 hours, about 5.3 MB a queue), dead ones kept until deleted.
