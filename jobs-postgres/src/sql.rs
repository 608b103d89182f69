//! The SQL of every operation, from the `.sql` files beside this module, with the schema
//! spliced in once per backend. Values always travel as bound parameters; the statements that
//! select jobs by a filter keep a `{selection}` placeholder that [`select`](crate::select)
//! fills per call.

use sqlx::postgres::{PgArguments, Postgres};
use sqlx::query::Query;

use crate::deliverable::OfferedQueues;
use crate::schema::Schema;

/// A statement with its arguments, as `sqlx::query` makes it.
pub(crate) type PgQuery<'q> = Query<'q, Postgres, PgArguments>;

/// The columns of a [`JobRecord`](jobs_core::JobRecord), read from the row alias `j`; JSON
/// columns come back as text so they are handed on without re-encoding.
pub(crate) const RECORD: &str =
    "j.id, j.name, j.queue, j.payload::text AS payload, j.version, j.priority, \
    j.run_at, j.status, j.attempt, j.max_attempts, j.backoff::text AS backoff, j.timeout_ms, \
    j.lease_worker, j.lease_token, j.lease_expires_at, j.progress, j.result::text AS result, \
    j.errors::text AS errors, j.unique_key, j.trace_context, j.tags, j.created_at, \
    j.started_at, j.finished_at, j.key_limits::text AS key_limits, j.step::text AS step, \
    j.inputs::text AS inputs";

/// What a fetch writes into each row it leases (row alias `j`; $2 now, $4 worker, $5 lease
/// expiry), each row with a fresh token.
const LEASE: &str = "status = 'running', attempt = j.attempt + 1, started_at = $2, \
    lease_worker = $4, lease_token = gen_random_uuid(), lease_expires_at = $5";

/// Every statement of one schema, each named for its file in `sql/`.
#[derive(Debug)]
pub(crate) struct Sql {
    /// The schema, and the channel its wake-ups go on.
    pub schema: Schema,
    /// What this process's enqueues saw of idle workers' offers, by queue: where the last one
    /// saw none, the next stores its job plainly rather than try to deliver it.
    pub offered: OfferedQueues,
    pub enqueue: String,
    pub enqueue_one: String,
    pub deliver_one: String,
    pub enqueue_many: String,
    pub enqueue_lock: String,
    pub enqueue_state: String,
    pub enqueue_guarded: String,
    pub cron_tick: String,
    pub fetch: String,
    pub fetch_one: String,
    pub fetch_limited: String,
    pub fetch_unkeyed: String,
    pub fetch_unkeyed_one: String,
    pub offer: String,
    pub withdraw: String,
    pub forget_offers: String,
    pub complete: String,
    pub fail: String,
    pub release: String,
    pub renew: String,
    pub places: String,
    pub progress: String,
    pub read: String,
    pub list: String,
    pub counts: String,
    pub queue_names: String,
    pub pause: String,
    pub paused_queues: String,
    pub set_limits: String,
    pub flow: String,
    pub finished_since: String,
    pub recount: String,
    pub retry: String,
    pub cancel: String,
    pub delete: String,
    pub rescue: String,
    pub prune: String,
    pub heartbeat: String,
    pub deregister: String,
    pub liveness_hold: String,
    pub liveness_register: String,
    pub gone_workers: String,
    pub live_workers: String,
    pub save_schedules: String,
    pub stored_schedules: String,
    pub publish_types: String,
    pub job_types: String,
    pub stored_versions: String,
}

impl Sql {
    pub(crate) fn new(schema: Schema) -> Self {
        let quoted = schema.quoted();
        let splice = |text: &str| {
            text.replace("{schema}", &quoted)
                .replace("{record}", RECORD)
                .replace("{lease}", LEASE)
        };
        Sql {
            enqueue: splice(include_str!("sql/enqueue.sql")),
            enqueue_one: splice(include_str!("sql/enqueue_one.sql")),
            deliver_one: splice(include_str!("sql/deliver_one.sql")),
            enqueue_many: splice(include_str!("sql/enqueue_many.sql")),
            enqueue_lock: splice(include_str!("sql/enqueue_lock.sql")),
            enqueue_state: splice(include_str!("sql/enqueue_state.sql")),
            enqueue_guarded: splice(include_str!("sql/enqueue_guarded.sql")),
            cron_tick: splice(include_str!("sql/cron_tick.sql")),
            fetch: splice(include_str!("sql/fetch.sql")),
            fetch_one: splice(include_str!("sql/fetch_one.sql")),
            fetch_limited: splice(include_str!("sql/fetch_limited.sql")),
            fetch_unkeyed: splice(include_str!("sql/fetch_unkeyed.sql")),
            fetch_unkeyed_one: splice(include_str!("sql/fetch_unkeyed_one.sql")),
            offer: splice(include_str!("sql/offer.sql")),
            withdraw: splice(include_str!("sql/withdraw.sql")),
            forget_offers: splice(include_str!("sql/forget_offers.sql")),
            complete: splice(include_str!("sql/complete.sql")),
            fail: splice(include_str!("sql/fail.sql")),
            release: splice(include_str!("sql/release.sql")),
            renew: splice(include_str!("sql/renew.sql")),
            places: splice(include_str!("sql/places.sql")),
            progress: splice(include_str!("sql/progress.sql")),
            read: splice(include_str!("sql/read.sql")),
            list: splice(include_str!("sql/list.sql")),
            counts: splice(include_str!("sql/counts.sql")),
            queue_names: splice(include_str!("sql/queue_names.sql")),
            pause: splice(include_str!("sql/pause.sql")),
            paused_queues: splice(include_str!("sql/paused_queues.sql")),
            set_limits: splice(include_str!("sql/set_limits.sql")),
            flow: splice(include_str!("sql/flow.sql")),
            finished_since: splice(include_str!("sql/finished_since.sql")),
            recount: splice(include_str!("sql/recount.sql")),
            retry: splice(include_str!("sql/retry.sql")),
            cancel: splice(include_str!("sql/cancel.sql")),
            delete: splice(include_str!("sql/delete.sql")),
            rescue: splice(include_str!("sql/rescue.sql")),
            prune: splice(include_str!("sql/prune.sql")),
            heartbeat: splice(include_str!("sql/heartbeat.sql")),
            deregister: splice(include_str!("sql/deregister.sql")),
            liveness_hold: splice(include_str!("sql/liveness_hold.sql")),
            liveness_register: splice(include_str!("sql/liveness_register.sql")),
            gone_workers: splice(include_str!("sql/gone_workers.sql")),
            live_workers: splice(include_str!("sql/live_workers.sql")),
            save_schedules: splice(include_str!("sql/save_schedules.sql")),
            stored_schedules: splice(include_str!("sql/stored_schedules.sql")),
            publish_types: splice(include_str!("sql/publish_types.sql")),
            job_types: splice(include_str!("sql/job_types.sql")),
            stored_versions: splice(include_str!("sql/stored_versions.sql")),
            schema,
            offered: OfferedQueues::default(),
        }
    }

    /// The LISTEN/NOTIFY channel of this schema.
    pub(crate) fn channel(&self) -> &str {
        self.schema.name()
    }

    /// The LISTEN/NOTIFY channel of this schema's job events: `<schema>:events`, the schema's
    /// name cut to keep it within PostgreSQL's 63 bytes.
    pub(crate) fn events_channel(&self) -> String {
        let name = self.schema.name();
        format!("{}:events", &name[..name.len().min(56)])
    }
}
