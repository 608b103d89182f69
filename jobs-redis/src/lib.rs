//! The Redis backend of `jobs`: every state change one atomic Lua function, new jobs leased
//! straight to idle workers over pub/sub, and keys laid out so that the same code runs on one
//! server or a Redis Cluster. It needs Redis 7.0 or newer (or Valkey), for its functions
//! (`FUNCTION LOAD`, `FCALL`): the backend loads its library by itself, and on an older server
//! its calls fail with an error that says so.
//!
//! ```no_run
//! # async fn demo() -> Result<(), jobs_core::Error> {
//! use jobs_core::{JobFilter, JobStatus, Operations, PageRequest};
//! use jobs_redis::RedisBackend;
//!
//! let backend = RedisBackend::connect("redis://127.0.0.1:6379/0?prefix=shop").await?;
//! let cluster = RedisBackend::connect("redis+cluster://10.0.0.1:7000,10.0.0.2:7000").await?;
//!
//! let dead = JobFilter::new().queue("email").status(JobStatus::Dead);
//! let page = backend.jobs(&dead, PageRequest::default()).await?;
//! # Ok(()) }
//! ```
//!
//! # URLs
//!
//! `redis://[user:password@]host[:port][/db]` (or `rediss://…`, `redis+unix:///path`) names
//! one server, `redis+cluster://[user:password@]host:port,host:port` a cluster through any of
//! its nodes. A URL that does not parse, names another scheme or carries an unknown option is
//! [`Error::Invalid`](jobs_core::Error::Invalid); a server that refuses or does not answer is
//! [`Error::Connect`](jobs_core::Error::Connect), at once (no retries before the first
//! connection).
//!
//! # URL options
//!
//! Options go in the query string: `redis://host/0?prefix=shop&connect_timeout=2s`.
//! Durations are written as `500ms`, `2s`, `1m`.
//!
//! | option             | default | what it sets                                                |
//! |--------------------|---------|-------------------------------------------------------------|
//! | `prefix`           | `jobs`  | the prefix of every key, so that applications share a Redis (no `{` or `}`) |
//! | `connect_timeout`  | `5s`    | how long one connection attempt may take                   |
//! | `response_timeout` | `10s`   | how long a command may wait for its reply                  |
//! | `protocol`         | `resp2` | redis-rs: the protocol, `resp2` or `resp3`                 |
//! | `layout`           | `hash`  | how the store is laid out: `hash`, or `streams`, the layout on Redis Streams being built (in part, not for production: see `docs/redis-streams.md`) |
//! | `db`, `user`, `pass` |       | redis-rs, `redis+unix://` only: the database and credentials (a TCP URL has them in its path and user info) |
//!
//! # Storage
//!
//! Jobs live under `{<prefix>:<queue>}:…`, one cluster slot per queue, each with its payload's
//! version (a field written only when the version is not 1); workers, schedules, the catalog
//! of job types and the registry of queues under `{<prefix>}:…`. Jobs are kept only as durably as Redis is
//! configured to: without persistence a restart loses them; with `appendonly yes` and
//! `appendfsync everysec`, at most about a second of changes. Retention bounds the memory
//! used: a waiting job costs about 610 bytes, a retained completed one about 525 (with a
//! payload of up to two values of 64 bytes, which the job's hash holds).
//!
//! The store names its layout in `{<prefix>}:layout`: `hash` (or `streams`, with the URL
//! option `layout=streams`), written by the first backend to call on a store without one. A backend refuses a store laid out in a way its release does
//! not read, with [`Error::Invalid`](jobs_core::Error::Invalid) naming that layout, from
//! [`connect`](RedisBackend::connect) or, for a backend given its prefix later, from its first
//! call, storing and changing nothing: a process left on an older release cannot corrupt a
//! store that a later release migrated.
//!
//! # Workflows
//!
//! A workflow step is stored with its job (the hash's `wf` field, absent on every other job,
//! so ordinary jobs store and cost what they did before). A step waiting for its inputs is
//! counted and listed as [`Waiting`](jobs_core::JobStatus::Waiting) and never fetched; the
//! script that completes a step, or makes it dead, applies its effects in the same atomic call
//! (delivering its result to the next steps, which become pending with their last input, and
//! cancelling those that can no longer run). A workflow is stored all or nothing, in one
//! script call. On one server its steps may be spread over any queues. On Redis Cluster,
//! where each queue is a slot of its own and no script reaches across slots, **the steps of
//! one workflow must share one queue**: an enqueue of steps whose effects name another queue
//! than their own is refused with [`Error::Invalid`](jobs_core::Error::Invalid), storing
//! nothing.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod backend;
mod catalog;
mod connect;
mod delivered;
mod deliveries;
mod enqueue;
mod events;
mod flow;
mod ids;
mod keys;
mod layout;
mod leases;
mod library;
mod listen;
mod liveness;
mod maintenance;
mod manage;
mod marker;
mod names;
mod options;
mod paused;
mod presence;
mod queues;
mod read;
mod record;
mod scripts;
mod streams;
mod versions;

pub use backend::RedisBackend;
/// The Redis client this backend is built on, for [`RedisBackend::from_client`].
pub use redis;
