//! Which schema a bare pool or connection enqueues into: the schema of the [`PgBackend`]s of
//! this process, looked up in a process-wide map that every backend registers its pool in.
//!
//! A pool is known by the address of the connect options that all its clones share (as the
//! [`notifier`](crate::notifier) knows it); each registration holds those options, so that no
//! other pool can take the address while the entry exists. A backend registers when it is made
//! and unregisters when its last clone is dropped.
//!
//! [`PgBackend`]: crate::PgBackend

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use jobs_core::Error;
use sqlx::postgres::PgConnectOptions;
use sqlx::PgPool;

use crate::sql::Sql;

/// A pool: the address of its connect options.
type PoolKey = usize;

/// The live backends of each registered pool: their statements, one per backend.
static POOLS: LazyLock<Mutex<HashMap<PoolKey, Vec<Arc<Sql>>>>> = LazyLock::new(Mutex::default);

fn pools() -> MutexGuard<'static, HashMap<PoolKey, Vec<Arc<Sql>>>> {
    POOLS.lock().unwrap_or_else(|e| e.into_inner())
}

fn key(pool: &PgPool) -> (PoolKey, Arc<PgConnectOptions>) {
    let options = pool.connect_options();
    (Arc::as_ptr(&options) as usize, options)
}

/// A backend's entry in the map, removed when dropped.
#[derive(Debug)]
pub(crate) struct Registration {
    key: PoolKey,
    sql: Arc<Sql>,
    /// Pins the address in the key.
    _options: Arc<PgConnectOptions>,
}

/// Records that a backend with the statements `sql` works over `pool`.
pub(crate) fn register(pool: &PgPool, sql: &Arc<Sql>) -> Registration {
    let (key, options) = key(pool);
    pools().entry(key).or_default().push(sql.clone());
    Registration {
        key,
        sql: sql.clone(),
        _options: options,
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut all = pools();
        if let Some(backends) = all.get_mut(&self.key) {
            if let Some(at) = backends.iter().position(|s| Arc::ptr_eq(s, &self.sql)) {
                backends.swap_remove(at);
            }
            if backends.is_empty() {
                all.remove(&self.key);
            }
        }
    }
}

/// The statements a bare `pool` enqueues with: those of the schema of the live backends over
/// it; for a pool no backend works over, those of the one schema of the process's backends.
pub(crate) fn for_pool(pool: &PgPool) -> Result<Arc<Sql>, Error> {
    let (key, _) = key(pool);
    let all = pools();
    match all.get(&key) {
        Some(backends) => one_schema(backends.iter(), "the pool"),
        None => one_schema(all.values().flatten(), "this process"),
    }
}

/// The statements a bare connection enqueues with: those of the one schema of the process's
/// live backends (a connection does not say which pool it came from).
pub(crate) fn for_connection() -> Result<Arc<Sql>, Error> {
    one_schema(pools().values().flatten(), "this process")
}

/// The statements of `backends` if they all use one schema, else why the schema is unknown.
fn one_schema<'a>(
    mut backends: impl Iterator<Item = &'a Arc<Sql>>,
    whose: &str,
) -> Result<Arc<Sql>, Error> {
    let Some(first) = backends.next() else {
        return Err(Error::Invalid(
            "no PgBackend exists in this process, so the schema to enqueue into is unknown: \
             create the backend first (`PgBackend::connect`, `PgBackend::from_pool` or \
             `jobs::connect`) or enqueue through it"
                .to_string(),
        ));
    };
    let mut schemas = BTreeSet::from([first.schema.name()]);
    schemas.extend(backends.map(|sql| sql.schema.name()));
    if schemas.len() == 1 {
        return Ok(first.clone());
    }
    let names: Vec<String> = schemas.iter().map(|name| format!("`{name}`")).collect();
    Err(Error::Invalid(format!(
        "the PgBackends of {whose} use several schemas ({}), so a bare pool or connection \
         cannot tell which to enqueue into: enqueue through the backend, `&backend` or \
         `backend.on(&mut *tx)`",
        names.join(", ")
    )))
}
