//! The shop's own data: orders (with their idempotency keys), the side effects each step
//! records, and the payment provider's charges (idempotent by key).
//!
//! On PostgreSQL they are tables in the app's schema, and an order is inserted in the same
//! transaction that stores its workflow (no order without its workflow, and no workflow
//! without its order); a step's side effect commits with its completion. On `memory://` and
//! Redis they are kept in this process (run the web server and the worker as one process).

use std::collections::HashMap;
use std::sync::Arc;

use jobs::postgres::sqlx::{self, PgPool, Row as _};
use jobs::postgres::PostgresExt as _;
use jobs::{AnyBackend, JobContext, JobError, Timestamp, WorkflowId};
use serde::Serialize;
use tokio::sync::Mutex;

use crate::steps::{order_workflow, Order};

/// A side effect of a step, recorded once per order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Effect {
    StockReserved,
    StockReleased,
    Payment,
    Email,
    Pdf,
    Completed,
}

impl Effect {
    fn as_str(self) -> &'static str {
        match self {
            Effect::StockReserved => "stock_reserved",
            Effect::StockReleased => "stock_released",
            Effect::Payment => "payment",
            Effect::Email => "email",
            Effect::Pdf => "pdf",
            Effect::Completed => "completed",
        }
    }
}

/// A stored order.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct StoredOrder {
    pub(crate) id: String,
    pub(crate) items: u32,
    pub(crate) workflow: WorkflowId,
    pub(crate) created_at: Timestamp,
}

/// What `POST /orders` stored: the order, and whether this request created it (a retried
/// request with the same idempotency key gets the first one's order).
pub(crate) struct Placed {
    pub(crate) order: StoredOrder,
    pub(crate) created: bool,
}

/// The shop's store, shared by the web server and the steps (a worker's `State`).
#[derive(Clone)]
pub(crate) struct Shop(Arc<Store>);

enum Store {
    Sql { pool: PgPool, schema: String },
    Local(Mutex<Local>),
}

#[derive(Default)]
struct Local {
    orders: HashMap<String, StoredOrder>,
    by_key: HashMap<String, String>,
    effects: Vec<(String, Effect)>,
    payments: HashMap<String, i64>,
}

/// A failed query, as a retryable job error or an HTTP 500.
fn db(e: sqlx::Error) -> jobs::Error {
    jobs::Error::backend(format!("shop database: {e}"))
}

impl Shop {
    /// The shop for `backend`: tables in `schema` of the backend's database on PostgreSQL
    /// (created if missing), this process's memory otherwise.
    pub(crate) async fn open(backend: &AnyBackend, schema: &str) -> Result<Shop, jobs::Error> {
        let Ok(pg) = backend.postgres() else {
            return Ok(Shop(Arc::new(Store::Local(Mutex::default()))));
        };
        if !schema
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(jobs::Error::Invalid(format!(
                "app schema `{schema}`: use lowercase letters, digits and _"
            )));
        }
        let pool = pg.pool().clone();
        let statements = [
            format!("CREATE SCHEMA IF NOT EXISTS {schema}"),
            format!(
                "CREATE TABLE IF NOT EXISTS {schema}.orders (
                    id text PRIMARY KEY,
                    idempotency_key text UNIQUE,
                    items integer NOT NULL,
                    workflow uuid,
                    created_at timestamptz NOT NULL DEFAULT now())"
            ),
            // No unique key on purpose: one row per (order, effect) is what the load test
            // checks, and only committing each effect with its step's completion keeps it so.
            format!(
                "CREATE TABLE IF NOT EXISTS {schema}.order_effects (
                    order_id text NOT NULL,
                    effect text NOT NULL,
                    at timestamptz NOT NULL DEFAULT now())"
            ),
            // `GET /orders/{id}` reads an order's effects: without this, a scan of them all.
            format!(
                "CREATE INDEX IF NOT EXISTS order_effects_order ON {schema}.order_effects (order_id)"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {schema}.payments (
                    idempotency_key text PRIMARY KEY,
                    id bigserial UNIQUE,
                    cents bigint NOT NULL,
                    calls integer NOT NULL DEFAULT 1)"
            ),
        ];
        // One process at a time: `IF NOT EXISTS` does not keep a web server and a worker that
        // start together from creating the same table twice (a unique-key error).
        let mut tx = pool.begin().await.map_err(db)?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))")
            .bind(format!("orders example: {schema}"))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        for statement in statements {
            sqlx::query(&statement)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        tx.commit().await.map_err(db)?;
        Ok(Shop(Arc::new(Store::Sql {
            pool,
            schema: schema.to_string(),
        })))
    }

    /// Stores the order and its workflow together; with an idempotency key already used, the
    /// order that key placed, and nothing new.
    pub(crate) async fn place(
        &self,
        backend: &AnyBackend,
        items: u32,
        card: String,
        key: Option<String>,
    ) -> Result<Placed, jobs::Error> {
        let id = jobs::JobId::new().to_string();
        let order = Order {
            order_id: id.clone(),
            items,
            card,
        };
        match &*self.0 {
            Store::Sql { schema, .. } => {
                // One transaction: the order (its idempotency key first, so that a replay
                // stores nothing), then every step of its workflow.
                let workflow = WorkflowId::new();
                // Begun by the backend, so that the workers are woken once it has committed
                // (a notification sent from inside it would make concurrent orders commit
                // one after another).
                let mut tx = backend.postgres()?.begin().await?;
                let inserted = sqlx::query(&format!(
                    "INSERT INTO {schema}.orders (id, idempotency_key, items, workflow)
                     VALUES ($1, $2, $3, $4)
                     ON CONFLICT (idempotency_key) DO NOTHING RETURNING created_at"
                ))
                .bind(&id)
                .bind(&key)
                .bind(items as i32)
                .bind(workflow.0)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?;
                let Some(row) = inserted else {
                    // The key's first request committed before this one read it.
                    let first = self.by_key(&mut tx, key.as_deref().unwrap_or("")).await?;
                    return Ok(Placed {
                        order: first,
                        created: false,
                    });
                };
                order_workflow(order)
                    .with_id(workflow)
                    .enqueue(&mut tx)
                    .await?;
                tx.commit().await?;
                Ok(Placed {
                    order: StoredOrder {
                        id,
                        items,
                        workflow,
                        created_at: row.get("created_at"),
                    },
                    created: true,
                })
            }
            Store::Local(local) => {
                // Held across the enqueue, so two requests with one key place one order.
                let mut local = local.lock().await;
                if let Some(first) = key.as_ref().and_then(|k| local.by_key.get(k)) {
                    let order = local.orders[first].clone();
                    return Ok(Placed {
                        order,
                        created: false,
                    });
                }
                let workflow = order_workflow(order).enqueue(backend).await?;
                let stored = StoredOrder {
                    id: id.clone(),
                    items,
                    workflow: workflow.id(),
                    created_at: chrono::Utc::now(),
                };
                local.orders.insert(id.clone(), stored.clone());
                if let Some(key) = key {
                    local.by_key.insert(key, id);
                }
                Ok(Placed {
                    order: stored,
                    created: true,
                })
            }
        }
    }

    async fn by_key(
        &self,
        tx: &mut sqlx::PgConnection,
        key: &str,
    ) -> Result<StoredOrder, jobs::Error> {
        let Store::Sql { schema, .. } = &*self.0 else {
            unreachable!("only the SQL store reads by key in a transaction")
        };
        let row = sqlx::query(&format!(
            "SELECT id, items, workflow, created_at FROM {schema}.orders WHERE idempotency_key = $1"
        ))
        .bind(key)
        .fetch_one(&mut *tx)
        .await
        .map_err(db)?;
        Ok(stored(&row))
    }

    /// The order `id`, if stored.
    pub(crate) async fn order(&self, id: &str) -> Result<Option<StoredOrder>, jobs::Error> {
        match &*self.0 {
            Store::Sql { pool, schema } => {
                let row = sqlx::query(&format!(
                    "SELECT id, items, workflow, created_at FROM {schema}.orders WHERE id = $1"
                ))
                .bind(id)
                .fetch_optional(pool)
                .await
                .map_err(db)?;
                Ok(row.as_ref().map(stored))
            }
            Store::Local(local) => Ok(local.lock().await.orders.get(id).cloned()),
        }
    }

    /// The side effects recorded for order `id`, oldest first.
    pub(crate) async fn effects(&self, id: &str) -> Result<Vec<&'static str>, jobs::Error> {
        match &*self.0 {
            Store::Sql { pool, schema } => {
                let rows = sqlx::query(&format!(
                    "SELECT effect FROM {schema}.order_effects WHERE order_id = $1 ORDER BY at"
                ))
                .bind(id)
                .fetch_all(pool)
                .await
                .map_err(db)?;
                Ok(rows
                    .iter()
                    .filter_map(|r| {
                        let name: String = r.get("effect");
                        EFFECTS
                            .iter()
                            .find(|e| e.as_str() == name)
                            .map(|e| e.as_str())
                    })
                    .collect())
            }
            Store::Local(local) => Ok(local
                .lock()
                .await
                .effects
                .iter()
                .filter(|(order, _)| order == id)
                .map(|(_, e)| e.as_str())
                .collect()),
        }
    }

    /// Records `effect` of the running step for `order_id`. On PostgreSQL it commits with the
    /// step's completion, or not at all.
    pub(crate) async fn record(
        &self,
        ctx: &JobContext,
        order_id: &str,
        effect: Effect,
    ) -> Result<(), JobError> {
        match &*self.0 {
            Store::Sql { schema, .. } => {
                let mut tx = jobs::postgres::transaction(ctx).await?;
                sqlx::query(&format!(
                    "INSERT INTO {schema}.order_effects (order_id, effect) VALUES ($1, $2)"
                ))
                .bind(order_id)
                .bind(effect.as_str())
                .execute(&mut *tx)
                .await
                .map_err(|e| JobError::retryable(db(e)))?;
            }
            Store::Local(local) => {
                let mut local = local.lock().await;
                let done = local
                    .effects
                    .iter()
                    .any(|(o, e)| o == order_id && *e == effect);
                if !done {
                    local.effects.push((order_id.to_string(), effect));
                }
            }
        }
        Ok(())
    }

    /// Charges `cents` for `order_id` at the payment provider, idempotently by the order's
    /// id: a repeated call returns the payment the first one made.
    pub(crate) async fn charge(&self, order_id: &str, cents: i64) -> Result<i64, JobError> {
        match &*self.0 {
            Store::Sql { pool, schema } => {
                let row = sqlx::query(&format!(
                    "INSERT INTO {schema}.payments (idempotency_key, cents) VALUES ($1, $2)
                     ON CONFLICT (idempotency_key) DO UPDATE SET calls = payments.calls + 1
                     RETURNING id"
                ))
                .bind(order_id)
                .bind(cents)
                .fetch_one(pool)
                .await
                .map_err(|e| JobError::retryable(db(e)))?;
                Ok(row.get("id"))
            }
            Store::Local(local) => {
                let mut local = local.lock().await;
                let next = local.payments.len() as i64 + 1;
                Ok(*local.payments.entry(order_id.to_string()).or_insert(next))
            }
        }
    }
}

const EFFECTS: [Effect; 6] = [
    Effect::StockReserved,
    Effect::StockReleased,
    Effect::Payment,
    Effect::Email,
    Effect::Pdf,
    Effect::Completed,
];

fn stored(row: &sqlx::postgres::PgRow) -> StoredOrder {
    let items: i32 = row.get("items");
    StoredOrder {
        id: row.get("id"),
        items: items as u32,
        workflow: WorkflowId(row.get("workflow")),
        created_at: row.get("created_at"),
    }
}
