//! A job stored at version 1 by one build runs, upgraded, in a second build: the two releases
//! of `examples/upgrade_v1.rs` and `examples/upgrade_v2.rs`, compiled as separate binaries, on
//! PostgreSQL and on Redis. (The memory backend lives in one process; the conformance suite's
//! `worker_upgrades_a_job_stored_at_an_older_version` covers it.)

use std::process::Command;

#[path = "support/examples.rs"]
mod examples;

/// Runs `binary` with `args`; its stdout lines, which it must exit 0 with.
fn run(binary: &str, args: &[String]) -> Vec<String> {
    let out = Command::new(examples::example(binary))
        .args(args)
        .output()
        .expect("run the example");
    assert!(
        out.status.success(),
        "{binary} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(str::to_string)
        .collect()
}

/// A store of its own on each server.
fn urls() -> Vec<String> {
    let name = format!("jobs_test_upgrade_{}", jobs::JobId::new().0.simple());
    let postgres = std::env::var("JOBS_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let redis =
        std::env::var("JOBS_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    vec![
        format!("{postgres}?schema={name}"),
        format!("{redis}?prefix={name}"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_stored_by_the_first_build_runs_upgraded_on_the_second() {
    use jobs::Operations;
    for url in urls() {
        let ids = run("upgrade_v1", &[url.clone(), "3".into()]);
        assert_eq!(ids.len(), 3, "{url}: {ids:?}");
        let backend = jobs::connect(&url).await.expect("connect");
        for id in &ids {
            let stored = backend.job(id.parse().unwrap()).await.expect("stored");
            assert_eq!((&*stored.name, stored.version), ("greet_customer", 1));
        }

        let mut args = vec![url.clone()];
        args.extend(ids.iter().cloned());
        let lines = run("upgrade_v2", &args);
        let want: Vec<String> = ids
            .iter()
            .enumerate()
            .map(|(n, id)| format!(r#"{id} completed "hello {n} (v2)""#))
            .collect();
        assert_eq!(lines, want, "{url}");
        for id in &ids {
            let record = backend.job(id.parse().unwrap()).await.expect("stored");
            assert_eq!(record.attempt, 1, "{url}: upgraded on its first attempt");
            assert_eq!(record.version, 1, "the stored payload keeps its version");
        }
        backend
            .delete_all(&jobs::JobFilter::new())
            .await
            .expect("clean up");
    }
}
