//! The PostgreSQL backend of `jobs`: PostgreSQL as a job queue with no other infrastructure.
//!
//! - [`PgBackend`] implements the whole [`Backend`](jobs_core::Backend) contract over a
//!   `sqlx` pool: batched `FOR UPDATE SKIP LOCKED` fetches, batched lease-checked writes,
//!   unique keys enforced by a unique index, cron ticks claimed once across workers, bulk
//!   retry / cancel / delete by filter in bounded batches, tags behind a GIN index.
//! - Idle workers wake on LISTEN/NOTIFY within milliseconds of an enqueue's commit, and poll
//!   only as a fallback. Concurrent enqueues of one process leave their notifications to a
//!   task that sends them after the commits, coalesced, so that they do not serialize on
//!   Postgres' notification lock (a `pg_notify` in a transaction holds it through the commit).
//! - A worker holds a session advisory lock on a connection of its own (outside the pool,
//!   `application_name` `jobs-liveness:<schema>`) that PostgreSQL drops when the worker's
//!   process dies; the other workers try the locks of the listed workers every 200 ms and
//!   rescue a gone worker's jobs at once, without waiting for its leases. Its leases are
//!   renewed on another connection of their own, so that handlers holding every pooled
//!   connection never hold up a renewal. So each worker process uses its pool, one listener
//!   connection, one renewal connection, and one liveness connection per worker.
//! - Jobs can be enqueued inside the caller's transaction ([`EnqueueTransaction`]; see
//!   [below](#enqueueing-in-a-transaction)), and a handler can make its own writes commit
//!   together with its job's completion ([`transaction`]).
//!
//! The tables and why they look as they do: [`schema`].
//!
//! ```no_run
//! # async fn demo(job: impl jobs_core::Job) -> Result<(), jobs_core::Error> {
//! use jobs_core::{JobExt, Worker};
//! use jobs_postgres::PgBackend;
//!
//! let backend = PgBackend::connect("postgres://postgres@127.0.0.1/app?schema=billing").await?;
//! let mut tx = backend.begin().await?;
//! let handle = job.enqueue(&mut tx).await?; // exists once the transaction commits
//! tx.commit().await?;
//!
//! Worker::new(backend.clone()).run().await?;
//! # Ok(()) }
//! ```
//!
//! # URL options
//!
//! [`PgBackend::connect`] (and so `jobs::connect`) reads these from the URL's query string,
//! e.g. `postgres://app@db/shop?schema=billing&pool_size=20&sslmode=require`. Any other
//! option is [`Error::Invalid`](jobs_core::Error::Invalid), naming the valid ones; so is a bad
//! value.
//!
//! | option | default | meaning |
//! | --- | --- | --- |
//! | `schema` | `jobs` | the schema of the job tables (a plain lowercase identifier), created and migrated by `connect` |
//! | `pool_size` | `10` | the most connections the backend's pool opens (at least 1); lease renewals take one more of their own; a worker sharing cores with a web server does better with 2 (docs/orders.md in the repository) |
//! | `connect_timeout` | `10s` | how long `connect` waits for the server to answer (a duration with its unit: `2s`, `500ms`); a refused connection fails at once |
//! | `acquire_timeout` | `10s` | how long an operation waits for a pooled connection, opening it included |
//! | `durable_completions` | `false` | `true`: the worker's batched completions commit synchronously, so an acknowledged completion survives a server crash; `false`: they do not wait for the WAL flush, and a crash can roll the last ones back, running those jobs again (see [`PgBackend::durable_completions`]) |
//! | `sslmode` (`ssl-mode`) | `prefer` | the driver's TLS mode: `disable`, `allow`, `prefer`, `require`, `verify-ca`, `verify-full` (TLS needs the feature `tls-rustls`) |
//! | `sslrootcert` (`ssl-root-cert`, `ssl-ca`), `sslcert` (`ssl-cert`), `sslkey` (`ssl-key`) | none | the driver's certificate files |
//! | `application_name` | none | the name the connections show in `pg_stat_activity` |
//! | `options` | none | server settings for every connection, as libpq's (`options=-c%20statement_timeout%3D5s`) |
//! | `host`, `hostaddr`, `port`, `dbname`, `user`, `password` | from the URL | the driver's overrides of the URL's parts (`host=/var/run/postgresql` for a socket) |
//! | `statement-cache-capacity` | `100` | prepared statements the driver keeps per connection |
//!
//! The driver's options are sqlx's `PgConnectOptions`, passed on as they are.
//!
//! # Enqueueing in a transaction
//!
//! [`JobExt::enqueue`](jobs_core::JobExt::enqueue) takes, besides `&backend`:
//!
//! - `&mut tx`, an [`EnqueueTransaction`] from [`PgBackend::begin`]: into the backend's
//!   schema, beside the caller's own writes on `&mut *tx`. It wakes the workers once it has
//!   committed, not from inside the commit, so concurrent transactions that enqueue do not
//!   commit one after another on Postgres' notification lock: the way for request handlers.
//! - `backend.on(&mut *tx)`: the caller's connection or transaction, into the backend's schema.
//!   On a [`PgBackend`] it is an inherent method; on the [`AnyBackend`](jobs_core::AnyBackend)
//!   that `jobs::connect` returns, it comes with [`PostgresExt`], and fails with
//!   [`Error::Invalid`](jobs_core::Error::Invalid) when that backend is not PostgreSQL. This
//!   is the way to say which schema.
//! - `&pool`: into the schema of the backends made over that pool
//!   ([`PgBackend::from_pool`], or [`PgBackend::pool`] of a connected one).
//! - `&mut *tx` (any `&mut PgConnection`), or a pool no backend was made over: into the schema
//!   of this process's backends (a connection does not say which pool it came from).
//!
//! Jobs never go to a fixed schema: when the rule above does not name exactly one (no backend
//! exists yet, or backends of several schemas are alive), the enqueue is refused with
//! [`Error::Invalid`](jobs_core::Error::Invalid). A job enqueued in a transaction exists, and
//! wakes the workers, when the transaction commits; if it rolls back, the job never existed.
//!
//! ```no_run
//! # async fn demo(job: impl jobs_core::Job) -> Result<(), jobs_core::Error> {
//! use jobs_core::{AnyBackend, JobExt};
//! use jobs_postgres::{PgBackend, PostgresExt};
//!
//! let backend: AnyBackend = // what `jobs::connect(url)` returns
//! #   AnyBackend::new(PgBackend::connect("postgres://localhost/app?schema=billing").await?);
//! let mut tx = backend.postgres()?.begin().await?;
//! sqlx::query("INSERT INTO billing_orders (id) VALUES (1)").execute(&mut *tx).await.unwrap();
//! job.enqueue(&mut tx).await?; // into `billing`, with the order
//! tx.commit().await?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod backend;
mod catalog;
mod columns;
mod connect;
mod deliverable;
mod enqueue;
mod error;
mod events;
mod fetch;
mod fetch_terms;
mod flow;
mod guarded;
mod limited;
mod listen;
mod liveness;
mod maintenance;
mod manage;
mod migrate;
mod notifier;
mod offers;
mod outbox;
mod pools;
mod presence;
mod producer;
mod queues;
mod reads;
mod record;
mod renewals;
pub mod schema;
mod select;
mod sql;
mod transaction;
mod writes;

pub use backend::PgBackend;
pub use outbox::EnqueueTransaction;
pub use producer::{OnConnection, PostgresExt, ViaPostgres};
pub use schema::DEFAULT_SCHEMA;
/// The driver, for the application's own queries on [`PgBackend::pool`].
pub use sqlx;
pub use transaction::{transaction, JobTransaction};
