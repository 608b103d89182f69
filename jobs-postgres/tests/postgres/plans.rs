//! The hot statements' plans look jobs up by key whatever size `jobs` had when a session first
//! planned them: a session keeps a statement's generic plan until the table's statistics
//! change, so a plan made on a new schema must not scan the table whole once it has grown.

use std::time::Duration;

use jobs_core::{Backend as _, LeasedJob, QueueFlow, QueueLimits, Rate, RenewParams};
use jobs_postgres::PgBackend;
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

use crate::support::{at, complete, fetch_of, new_job, new_schema, put, url};

/// Queue `c`'s limits, a global concurrency and a rate, so that its fetch goes through the
/// limited fetch of one queue, every statement of it.
fn capped() -> Vec<QueueFlow> {
    let rate = Rate::new(1_000_000, Duration::from_secs(1));
    vec![QueueFlow {
        queue: "c".into(),
        limits: QueueLimits::default().concurrency(100).rate(rate),
        keyed: false,
    }]
}

/// Renews `leased` at `now_ms` for another minute, answering which renewals were accepted.
async fn renew(backend: &PgBackend, leased: &[LeasedJob], now_ms: i64) -> Vec<bool> {
    backend
        .renew(RenewParams {
            items: leased.iter().map(LeasedJob::lease).collect(),
            expires_at: at(now_ms + 60_000),
            now: at(now_ms),
        })
        .await
        .expect("renew")
}

/// The sequential scans of `schema`'s `jobs` table so far, the session's own included: the
/// session that ran the statements sends its counts first.
async fn seq_scans(pool: &PgPool, schema: &str) -> i64 {
    // Flushed when the session next goes idle, that is, once this statement has answered.
    sqlx::query("SELECT pg_stat_force_next_flush()")
        .execute(pool)
        .await
        .expect("flush the session's counts");
    sqlx::query_scalar(&format!(
        "SELECT seq_scan FROM pg_stat_user_tables WHERE relid = '\"{schema}\".jobs'::regclass"
    ))
    .fetch_one(pool)
    .await
    .expect("read the table's counts")
}

#[tokio::test]
async fn fetches_renewals_and_completions_planned_on_a_small_table_never_scan_it_once_it_has_grown()
{
    // One session, so that the statements below reuse the plans the first ones made.
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect(&url())
        .await
        .expect("the test database is reachable");
    let schema = new_schema();
    let backend = PgBackend::from_pool(pool.clone())
        .schema(&schema)
        .expect("a valid schema name");
    backend.migrate().await.expect("migrations apply");
    // Ten fetches and completions while `jobs` holds a job or two: past the five custom plans
    // PostgreSQL makes before it settles on a generic one.
    for t in 0..10 {
        put(&backend, vec![new_job("small", "p")], at(t)).await;
        let leased = fetch_of(&backend, &["p", "q"], 1, t, Vec::new()).await;
        assert_eq!(renew(&backend, &leased, t).await, [true]);
        assert_eq!(complete(&backend, &leased, t).await, [true]);
        put(&backend, vec![new_job("small", "c")], at(t)).await;
        let limited = fetch_of(&backend, &["c"], 1, t, capped()).await;
        assert_eq!(complete(&backend, &limited, t).await, [true]);
    }
    // The table grows to hundreds of pages.
    for queue in ["p", "q", "c", "p", "q"] {
        let jobs = (0..1_000).map(|_| new_job("grown", queue)).collect();
        put(&backend, jobs, at(10)).await;
    }
    let before = seq_scans(&pool, &schema).await;
    let leased = fetch_of(&backend, &["p", "q"], 40, 20, Vec::new()).await;
    assert_eq!(leased.len(), 40);
    assert_eq!(renew(&backend, &leased, 21).await, [true; 40]);
    for one in leased[..20].chunks(1) {
        assert_eq!(complete(&backend, one, 21).await, [true]);
    }
    assert_eq!(complete(&backend, &leased[20..], 22).await, [true; 20]);
    let limited = fetch_of(&backend, &["c"], 10, 20, capped()).await;
    assert_eq!(complete(&backend, &limited, 22).await, [true; 10]);
    assert_eq!(
        seq_scans(&pool, &schema).await,
        before,
        "a fetch, a renewal or a completion scanned `jobs` whole"
    );
    let pages: i64 = sqlx::query_scalar(&format!(
        "SELECT pg_relation_size('\"{schema}\".jobs') / 8192"
    ))
    .fetch_one(&pool)
    .await
    .expect("the table's size");
    assert!(pages > 50, "the table grew to {pages} pages only");
    let completed: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM \"{schema}\".jobs WHERE status = 'completed'"
    ))
    .fetch_one(&pool)
    .await
    .expect("count the completed");
    assert_eq!(completed, 70);
    sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .execute(&pool)
        .await
        .expect("drop the test schema");
}

#[tokio::test]
async fn the_hot_paths_functions_never_compile_their_plans_with_jit() {
    let pool = crate::support::pool().await;
    let schema = new_schema();
    let backend = PgBackend::from_pool(pool.clone())
        .schema(&schema)
        .expect("a valid schema name");
    backend.migrate().await.expect("migrations apply");
    // A function replaced without its settings (`CREATE OR REPLACE` drops them) would JIT
    // compile a plan whose estimate crossed `jit_above_cost` on every call. The signatures
    // are those the statements in `sql/` call (older ones stay for the releases before).
    let hot = [
        "complete_jobs(uuid[], uuid[], text[], timestamptz, boolean, text)",
        "fetch_limited(text[], timestamptz, int8, text, timestamptz, text[], int4[], int4[], \
         int8[], bool[], bool[], int8, text, int4[], uuid[], uuid[])",
        "fetch_ready(text[], timestamptz, int8, text, timestamptz, text[], int4[])",
        "fetch_unkeyed(text[], timestamptz, int8, text, timestamptz, text[], int4[], int4[], \
         int8[], bool[], text, int4[], uuid[], uuid[])",
        "fetch_unkeyed_one(text, timestamptz, int8, text, timestamptz, text[], int4[], int4, \
         int4, int8, text, uuid[], uuid[])",
        "fetch_unkeyed_one(text, timestamptz, int8, text, timestamptz, text[], int4[], int4, \
         int4, int8, text, uuid[], uuid[], int8)",
        "renew_leases(uuid[], uuid[], timestamptz, timestamptz)",
    ];
    let with_jit: Vec<String> = sqlx::query_scalar(
        "SELECT f FROM unnest($2::text[]) AS f
         WHERE NOT COALESCE((SELECT 'jit=off' = ANY (p.proconfig) FROM pg_proc p
                             WHERE p.oid = to_regprocedure(quote_ident($1) || '.' || f)),
                            false)",
    )
    .bind(&schema)
    .bind(&hot[..])
    .fetch_all(&pool)
    .await
    .expect("read the functions' settings");
    assert!(
        with_jit.is_empty(),
        "JIT is on in (or no such function) {with_jit:?}"
    );
    sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .execute(&pool)
        .await
        .expect("drop the test schema");
}
