//! Reading jobs back: one by id, a page of the jobs matching a filter, a queue's counts, the
//! queues' names.

use jobs_core::{CountsParams, Error, FinishedParams, JobId, JobRecord, ListParams, QueueCounts};
use sqlx::{PgExecutor, Row};

use crate::error::db;
use crate::record::record;
use crate::select::Selection;
use crate::sql::Sql;

/// One job by id.
pub(crate) async fn read<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    id: JobId,
) -> Result<Option<JobRecord>, Error> {
    let row = sqlx::query(&sql.read)
        .bind(id.0)
        .fetch_optional(exec)
        .await
        .map_err(db)?;
    row.as_ref().map(record).transpose()
}

/// A page of the jobs matching the filter, in id order.
pub(crate) async fn list<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: ListParams,
) -> Result<Vec<JobRecord>, Error> {
    if p.limit == 0 {
        return Ok(Vec::new());
    }
    let selection = Selection::matching(&p.filter, p.after);
    let statement = selection.splice(&sql.list, 2);
    let query = sqlx::query(&statement).bind(i64::try_from(p.limit).unwrap_or(i64::MAX));
    let rows = selection.bind(query).fetch_all(exec).await.map_err(db)?;
    rows.iter().map(record).collect()
}

/// A queue's jobs by status.
pub(crate) async fn counts<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: CountsParams,
) -> Result<QueueCounts, Error> {
    let rows = sqlx::query(&sql.counts)
        .bind(p.queue)
        .fetch_all(exec)
        .await
        .map_err(db)?;
    let mut counts = QueueCounts::default();
    for row in rows {
        let status: String = row.try_get("status").map_err(db)?;
        let n: i64 = row.try_get("n").map_err(db)?;
        *counts.get_mut(status.parse()?) = u64::try_from(n).unwrap_or(0);
    }
    Ok(counts)
}

/// How many of a queue's jobs finished at or after `p.since`.
pub(crate) async fn finished_since<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: FinishedParams,
) -> Result<u64, Error> {
    let n: i64 = sqlx::query_scalar(&sql.finished_since)
        .bind(p.queue)
        .bind(p.since)
        .fetch_one(exec)
        .await
        .map_err(db)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Every queue that holds jobs or that jobs were deleted from, sorted.
pub(crate) async fn queue_names<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
) -> Result<Vec<String>, Error> {
    sqlx::query_scalar(&sql.queue_names)
        .fetch_all(exec)
        .await
        .map_err(db)
}

#[cfg(test)]
mod tests {
    use jobs_core::JobFilter;
    use sqlx::postgres::PgRow;
    use sqlx::PgPool;

    use super::*;
    use crate::PgBackend;

    /// A migrated backend in a new schema of the test database, and its pool and schema.
    async fn fresh() -> (PgBackend, PgPool, String) {
        let url = std::env::var("JOBS_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
        let pool = PgPool::connect(&url).await.expect("the test database");
        let secs = chrono::Utc::now().timestamp();
        let schema = format!(
            "jobs_test_{secs}_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let backend = PgBackend::from_pool(pool.clone()).schema(&schema).unwrap();
        backend.migrate().await.expect("migrate");
        (backend, pool, schema)
    }

    /// The rows of `explain` (an `EXPLAIN …` prefix) of the statement `list` sends for
    /// `filter`, with a limit of 50.
    async fn explain(backend: &PgBackend, filter: &JobFilter, explain: &str) -> Vec<PgRow> {
        let selection = Selection::matching(filter, None);
        let statement = format!("{explain} {}", selection.splice(&backend.sql().list, 2));
        selection
            .bind(sqlx::query(&statement).bind(50_i64))
            .fetch_all(backend.pool())
            .await
            .expect("explain")
    }

    /// On a table of many jobs, a tag filter is served by the partial GIN index `jobs_tags`
    /// in the plan PostgreSQL picks for the statement `list` sends.
    #[tokio::test(flavor = "current_thread")]
    async fn a_tag_filter_uses_the_gin_index() {
        let (backend, pool, schema) = fresh().await;
        // 50,000 jobs, one in three tagged with its order and one of 1,000 customers.
        sqlx::raw_sql(&format!(
            "INSERT INTO \"{schema}\".jobs (id, name, queue, payload, priority, run_at, status,
                 max_attempts, backoff, created_at, finished_at, tags)
             SELECT gen_random_uuid(), 'n', 'q', '{{}}', 0, now(), 'completed', 3, '{{}}', now(),
                    now(),
                    CASE WHEN g % 3 = 0 THEN ARRAY['order:' || g, 'customer:' || g % 1000]
                         ELSE '{{}}' END
             FROM generate_series(1, 50000) g;
             ANALYZE \"{schema}\".jobs"
        ))
        .execute(&pool)
        .await
        .expect("fill the table");
        let plan = explain(&backend, &JobFilter::new().tag("order:4242"), "EXPLAIN").await;
        let plan: Vec<String> = plan.iter().map(|row| row.get(0)).collect();
        let plan = plan.join("\n");
        sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
            .execute(&pool)
            .await
            .expect("drop the schema");
        assert!(plan.contains("Bitmap Index Scan on jobs_tags"), "{plan}");
    }

    /// A tag lookup reads the index's tree, not a list of every entry added since the last
    /// vacuum: 20,000 tagged jobs later, finding one tag's job reads a handful of pages.
    #[tokio::test(flavor = "current_thread")]
    async fn a_tag_lookup_reads_the_tree_not_the_entries_added_since_a_vacuum() {
        let (backend, pool, schema) = fresh().await;
        sqlx::raw_sql(&format!(
            "INSERT INTO \"{schema}\".jobs (id, name, queue, payload, priority, run_at, status,
                 max_attempts, backoff, created_at, tags)
             SELECT gen_random_uuid(), 'n', 'q', '{{}}', 0, now(), 'pending', 3, '{{}}', now(),
                    ARRAY['workflow:' || g]
             FROM generate_series(1, 20000) g"
        ))
        .execute(&pool)
        .await
        .expect("fill the table");
        let filter = JobFilter::new().tag("workflow:4242");
        let plan = explain(&backend, &filter, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)").await;
        let plan: serde_json::Value = plan[0].get(0);
        let top = &plan[0]["Plan"];
        let pages = top["Shared Hit Blocks"].as_i64().unwrap()
            + top["Shared Read Blocks"].as_i64().unwrap();
        sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
            .execute(&pool)
            .await
            .expect("drop the schema");
        assert_eq!(top["Actual Rows"], 1, "{plan}");
        assert!(pages <= 16, "the lookup read {pages} pages: {plan}");
    }
}
