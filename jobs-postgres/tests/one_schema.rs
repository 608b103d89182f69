//! The rule for bare pools and connections (a pool no backend was made over, `&mut *tx`): they
//! enqueue into the schema of the process's backends. Checked in a test process of its own,
//! which holds one backend or none (the other tests' process holds many, of many schemas).

use jobs_core::{Error, JobError, JobExt, JobStatus};
use jobs_macros::job;
use jobs_postgres::PgBackend;
use sqlx::PgPool;

/// A job that returns `n`.
#[job(crate = "jobs_core", queue = "solo")]
async fn solo(n: u64) -> Result<u64, JobError> {
    Ok(n)
}

fn url() -> String {
    std::env::var("JOBS_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_string())
}

async fn rows_in(pool: &PgPool, schema: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT count(*) FROM \"{schema}\".jobs"))
        .fetch_one(pool)
        .await
        .expect("count the jobs")
}

fn assert_schema_unknown(err: Error) {
    assert!(matches!(err, Error::Invalid(_)), "{err:?}");
    assert!(err.to_string().contains("no PgBackend exists"), "{err}");
}

#[tokio::test]
async fn bare_pools_and_connections_enqueue_into_the_schema_of_the_one_backend() {
    // The application's own pool: no backend is made over it.
    let app = PgPool::connect(&url()).await.expect("the test database");
    assert_schema_unknown(Solo::new(1).enqueue(&app).await.expect_err("refused"));

    let secs = chrono::Utc::now().timestamp();
    let random = uuid::Uuid::new_v4().simple().to_string();
    let schema = format!("jobs_test_{secs}_{}", &random[..12]);
    let joiner = if url().contains('?') { '&' } else { '?' };
    let backend = PgBackend::connect(&format!("{}{joiner}schema={schema}", url()))
        .await
        .expect("connect");

    let mut tx = app.begin().await.unwrap();
    let dropped = Solo::new(2).enqueue(&mut *tx).await.expect("enqueue");
    assert_eq!(dropped.status(&mut *tx).await.unwrap(), JobStatus::Pending);
    tx.rollback().await.unwrap();
    assert_eq!(rows_in(&app, &schema).await, 0);

    let mut tx = app.begin().await.unwrap();
    let kept = Solo::new(3).enqueue(&mut *tx).await.expect("enqueue");
    tx.commit().await.unwrap();
    assert_eq!(kept.status(&backend).await.unwrap(), JobStatus::Pending);

    let pooled = Solo::new(4).enqueue(&app).await.expect("enqueue");
    assert_eq!(pooled.status(&backend).await.unwrap(), JobStatus::Pending);
    assert_eq!(rows_in(&app, &schema).await, 2);

    // Once the backend is gone, the schema is unknown again.
    drop(backend);
    let mut conn = app.acquire().await.unwrap();
    assert_schema_unknown(Solo::new(5).enqueue(&mut *conn).await.expect_err("refused"));
    sqlx::query(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .execute(&app)
        .await
        .expect("drop the schema");
}
