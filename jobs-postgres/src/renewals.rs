//! The connection lease renewals take: one of their own beside the backend's pool, opened by
//! the first renewal, so that a renewal never waits for a pooled connection.
//!
//! Handlers share the pool with the worker. With as many handlers as the pool has connections
//! each holding one (a completion transaction kept open, a long query), a renewal through the
//! pool waited for one of them to end; a wait longer than the lease let every lease lapse while
//! its handler still ran, and the jobs were given up as lost and run again elsewhere meanwhile.
//! On a connection of their own, renewals wait for nothing but one another (a backend's
//! workers renew in turn, a statement each). It costs one connection per backend whose workers
//! run, shared by the backends [`PgBackend::schema`](crate::PgBackend::schema) makes of it.

use std::sync::{Arc, OnceLock};

use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;

use crate::connect;

/// The renewals' connection of a backend over some pool: that pool's options, one connection.
#[derive(Debug)]
pub(crate) struct Renewals {
    /// The backend's pool, whose connect options and acquire timeout it takes.
    options: Arc<PgConnectOptions>,
    acquire_timeout: std::time::Duration,
    /// Opened by the first renewal (a pool needs a runtime, which making a backend does not).
    pool: OnceLock<PgPool>,
}

impl Renewals {
    /// The renewals' connection beside `pool`, not opened yet.
    pub(crate) fn beside(pool: &PgPool) -> Self {
        Renewals {
            options: pool.connect_options(),
            acquire_timeout: pool.options().get_acquire_timeout(),
            pool: OnceLock::new(),
        }
    }

    /// A pool of the one connection renewals take, opened when first used.
    pub(crate) fn pool(&self) -> &PgPool {
        self.pool.get_or_init(|| {
            connect::pool_options()
                .max_connections(1)
                .acquire_timeout(self.acquire_timeout)
                .connect_lazy_with((*self.options).clone())
        })
    }
}
