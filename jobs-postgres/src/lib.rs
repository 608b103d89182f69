//! The PostgreSQL backend of `jobs`: PostgreSQL as a job queue with no other infrastructure.
//!
//! - [`PgBackend`] implements the whole [`Backend`](jobs_core::Backend) contract over a
//!   `sqlx` pool: batched `FOR UPDATE SKIP LOCKED` fetches, batched lease-checked writes,
//!   unique keys enforced by a unique index, cron ticks claimed once across workers.
//! - Idle workers wake on LISTEN/NOTIFY within milliseconds of an enqueue's commit, and poll
//!   only as a fallback. Concurrent enqueues of one process leave their notifications to a
//!   task that sends them after the commits, coalesced, so that they do not serialize on
//!   Postgres' notification lock (a `pg_notify` in a transaction holds it through the commit).
//! - Jobs can be enqueued inside the caller's transaction ([`Producer`](jobs_core::Producer)
//!   for `&PgPool`, `&mut PgConnection` and [`PgBackend::on`]), and a handler can make its own
//!   writes commit together with its job's completion ([`transaction`]).
//!
//! The tables and why they look as they do: [`schema`].
//!
//! ```no_run
//! # async fn demo(job: impl jobs_core::Job) -> Result<(), jobs_core::Error> {
//! use jobs_core::{JobExt, Worker};
//! use jobs_postgres::PgBackend;
//!
//! let backend = PgBackend::connect("postgres://postgres@127.0.0.1/app").await?;
//! let mut tx = backend.pool().begin().await.unwrap();
//! let handle = job.enqueue(&mut *tx).await?; // exists once the transaction commits
//! tx.commit().await.unwrap();
//!
//! Worker::new(backend.clone()).run().await?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod backend;
mod connect;
mod enqueue;
mod error;
mod fetch;
mod listen;
mod maintenance;
mod manage;
mod migrate;
mod notifier;
mod producer;
mod reads;
mod record;
pub mod schema;
mod sql;
mod transaction;
mod writes;

pub use backend::PgBackend;
pub use producer::{OnConnection, ViaPostgres};
pub use schema::DEFAULT_SCHEMA;
/// The driver, for the application's own queries on [`PgBackend::pool`].
pub use sqlx;
pub use transaction::{transaction, JobTransaction};
