//! The `jobs` binary against the real PostgreSQL and Redis: jobs are seeded through the library,
//! the binary's output (tables and `--json`) and exit codes are checked, and its changes are
//! read back through the library.
//!
//! Each test works in a schema (Postgres) or key prefix (Redis) of its own, dropped at its end,
//! so the tests run in parallel. Servers: `JOBS_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`) and `JOBS_TEST_REDIS_URL` (default
//! `redis://127.0.0.1:6379`).

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use jobs::prelude::*;
use jobs::{
    AnyBackend, JobHandle, JobId, JobRecord, JobStatus, Operations, Page, QueueLimits, Rate,
    ScheduleSummary, Stranded, WorkerSummary,
};
use jobs_core::{
    Backend, CompleteParams, Completion, EnqueueParams, ErrorKind, ErrorReport, FailParams,
    Failure, FetchParams, LeasedJob,
};
use serde_json::Value;

/// A mail to send.
#[job(queue = "email", name = "mail.send", attempts = 3, tags = ["mail"])]
async fn send_mail(to: String) -> Result<(), JobError> {
    let _ = to;
    Ok(())
}

/// A report to render.
#[job(queue = "pdf", name = "pdf.render", attempts = 2)]
async fn render(page: u32) -> Result<(), JobError> {
    let _ = page;
    Ok(())
}

/// Waits until the test opens the gate named `key`.
#[job(queue = "cli_work", name = "work.hold")]
async fn hold(key: String) -> Result<u32, JobError> {
    gate(&key).notified().await;
    Ok(7)
}

/// A periodic job of the worker's queue: its schedule is recorded by the worker.
#[job(
    queue = "cli_work",
    name = "work.nightly",
    cron = "0 3 * * *",
    tz = "Europe/Paris"
)]
async fn nightly() {}

/// The gate a [`hold`] job of `key` waits on.
fn gate(key: &str) -> Arc<tokio::sync::Notify> {
    static GATES: OnceLock<Mutex<HashMap<String, Arc<tokio::sync::Notify>>>> = OnceLock::new();
    let mut gates = GATES.get_or_init(Default::default).lock().unwrap();
    gates.entry(key.to_string()).or_default().clone()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Postgres,
    Redis,
}

/// A fresh, empty store of one backend, with a runtime for the library's calls.
struct Store {
    kind: Kind,
    /// The schema or key prefix.
    space: String,
    url: String,
    backend: AnyBackend,
    rt: tokio::runtime::Runtime,
}

fn base_url(kind: Kind) -> String {
    match kind {
        Kind::Postgres => std::env::var("JOBS_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into()),
        Kind::Redis => {
            std::env::var("JOBS_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
        }
    }
}

impl Store {
    fn fresh(kind: Kind) -> Self {
        let random = JobId::new().0.simple().to_string();
        let space = format!("cli_{}", &random[random.len() - 12..]);
        let base = base_url(kind);
        let joiner = if base.contains('?') { '&' } else { '?' };
        let option = match kind {
            Kind::Postgres => "schema",
            Kind::Redis => "prefix",
        };
        let url = format!("{base}{joiner}{option}={space}");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let backend = rt.block_on(jobs::connect(&url)).expect("connect");
        Store {
            kind,
            space,
            url,
            backend,
            rt,
        }
    }

    fn block<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// Runs the binary on this store with `args`.
    fn run(&self, args: &[&str]) -> Run {
        run(&self.url, args)
    }

    /// Runs the binary, expecting success; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(out.code, 0, "jobs {args:?} failed: {}", out.stderr);
        out.stdout
    }

    /// Runs the binary with `--json`, expecting success; its stdout parsed as `T`.
    fn json<T: serde::de::DeserializeOwned>(&self, args: &[&str]) -> T {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.ok(&all);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    }

    fn record(&self, id: JobId) -> JobRecord {
        self.block(self.backend.job(id)).expect("the job")
    }

    fn status(&self, id: JobId) -> JobStatus {
        self.record(id).status
    }

    /// Leases the next ready job of `queue` as worker `checker`.
    fn fetch(&self, queue: &str) -> LeasedJob {
        let params = FetchParams {
            ended: Vec::new(),
            queues: vec![queue.to_string()],
            limit: 1,
            worker: "checker".into(),
            lease_for: Duration::from_secs(60),
            now: chrono::Utc::now(),
            known: None,
            flow: Vec::new(),
            reserve: 0,
            deliver: 0,
        };
        let mut got = self.block(self.backend.fetch(params)).expect("fetch");
        assert_eq!(got.len(), 1, "one ready job in {queue}");
        got.remove(0)
    }

    /// Fails a leased job: retried at once with `retry`, else dead.
    fn fail(&self, job: &LeasedJob, error: ErrorReport, retry: bool) {
        let now = chrono::Utc::now();
        let params = FailParams {
            items: vec![Failure {
                lease: job.lease(),
                error,
                retry_at: retry.then_some(now),
            }],
            now,
        };
        assert_eq!(self.block(self.backend.fail(params)).unwrap(), [true]);
    }

    /// Fetches the next job of `queue` and fails it for good: it is dead.
    fn kill_next(&self, queue: &str) -> JobId {
        let job = self.fetch(queue);
        self.fail(&job, ErrorReport::new(ErrorKind::Retryable, "down"), false);
        job.record.id
    }

    /// Fetches the next job of `queue` and completes it.
    fn complete_next(&self, queue: &str) -> JobId {
        let job = self.fetch(queue);
        let params = CompleteParams {
            items: vec![Completion {
                lease: job.lease(),
                result: serde_json::value::to_raw_value(&1).unwrap(),
            }],
            now: chrono::Utc::now(),
        };
        assert_eq!(self.block(self.backend.complete(params)).unwrap(), [true]);
        job.record.id
    }

    fn mail(&self, to: &str) -> JobId {
        self.block(SendMail::new(to.into()).enqueue(&self.backend))
            .unwrap()
            .id()
    }

    fn render(&self, page: u32) -> JobId {
        self.block(Render::new(page).enqueue(&self.backend))
            .unwrap()
            .id()
    }
}

impl Drop for Store {
    /// Drops the schema or deletes the prefix's keys (best effort: a leftover does no harm).
    fn drop(&mut self) {
        match self.kind {
            Kind::Postgres => {
                let sql = format!(
                    "SET lock_timeout = '5s'; DROP SCHEMA IF EXISTS \"{}\" CASCADE",
                    self.space
                );
                let _ = Command::new("psql")
                    .args([base_url(Kind::Postgres).as_str(), "-qc", &sql])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
            Kind::Redis => {
                let script = "for _, p in ipairs(ARGV) do for _, k in ipairs(redis.call('KEYS', p)) do redis.call('DEL', k) end end";
                let (p1, p2) = (
                    format!("{{{}}}*", self.space),
                    format!("{{{}:*", self.space),
                );
                let _ = Command::new("redis-cli")
                    .args(["-u", &base_url(Kind::Redis), "EVAL", script, "0", &p1, &p2])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}

/// What a run of the binary did.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs the binary with `--url url` (if not empty) and `args`, with no `JOBS_URL` set.
fn run(url: &str, args: &[&str]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jobs"));
    cmd.env_remove("JOBS_URL");
    if !url.is_empty() {
        cmd.args(["--url", url]);
    }
    let out = cmd.args(args).output().expect("run jobs");
    Run {
        code: out.status.code().expect("exited"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Asserts that a run failed with `code` and one line `jobs: …` containing `text`.
fn assert_fails(out: &Run, code: i32, text: &str) {
    assert_eq!(out.code, code, "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "one line: {out:?}");
    assert!(out.stderr.starts_with("jobs: "), "{out:?}");
    assert!(out.stderr.contains(text), "`{text}` in {out:?}");
}

/// Runs `scenario` on a fresh store of each backend.
macro_rules! on_both {
    ($scenario:ident, $pg:ident, $redis:ident) => {
        #[test]
        fn $pg() {
            $scenario(Store::fresh(Kind::Postgres));
        }
        #[test]
        fn $redis() {
            $scenario(Store::fresh(Kind::Redis));
        }
    };
}

#[path = "cli/catalog.rs"]
mod catalog;
#[path = "cli/serve.rs"]
mod serve;
#[path = "cli/workflow.rs"]
mod workflow;

use workflow::workflow_steps_and_states;

on_both!(
    stats_and_queues,
    stats_and_queues_pg,
    stats_and_queues_redis
);
on_both!(list_filters_and_pages, list_pages_pg, list_pages_redis);
on_both!(show_a_dead_job, show_pg, show_redis);
on_both!(retry_by_id_and_filter, retry_pg, retry_redis);
on_both!(
    cancel_delete_and_purge,
    cancel_delete_purge_pg,
    cancel_delete_purge_redis
);
on_both!(workers_schedules_stranded, workers_pg, workers_redis);
on_both!(limits_set_show_and_clear, limits_pg, limits_redis);
on_both!(workflow_steps_and_states, workflow_pg, workflow_redis);
on_both!(bad_limits_change_nothing, bad_limits_pg, bad_limits_redis);

/// Per-queue counts by status, the oldest pending job's age (or `-`), and totals.
fn stats_and_queues(s: Store) {
    assert_eq!(s.ok(&["stats"]), "no queues\n");
    s.mail("a@example.com");
    s.mail("b@example.com");
    s.block(
        SendMail::new("later@example.com".into())
            .delay(Duration::from_secs(3600))
            .enqueue(&s.backend),
    )
    .unwrap();
    let dead = s.render(1);
    let running = s.render(2);
    let cancelled = s.render(3);
    assert_eq!(s.kill_next("pdf"), dead);
    assert_eq!(s.fetch("pdf").record.id, running);
    s.block(s.backend.cancel(cancelled)).unwrap();

    let stats: Vec<Value> = s.json(&["stats"]);
    let by_name = |name: &str| stats.iter().find(|q| q["name"] == name).unwrap().clone();
    let email = by_name("email");
    let counts = |q: &Value| {
        [
            "waiting",
            "pending",
            "scheduled",
            "running",
            "completed",
            "dead",
            "cancelled",
        ]
        .map(|k| q["counts"][k].as_u64().unwrap())
    };
    assert_eq!(counts(&email), [0, 2, 1, 0, 0, 0, 0]);
    assert!(email["oldest_pending_age_secs"].as_u64().unwrap() < 60);
    assert!(email["oldest_pending_at"].is_string());
    let pdf = by_name("pdf");
    assert_eq!(counts(&pdf), [0, 0, 0, 1, 0, 1, 1]);
    assert!(pdf["oldest_pending_at"].is_null());

    let table = s.ok(&["stats"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        [
            "QUEUE",
            "WAITING",
            "PENDING",
            "SCHEDULED",
            "RUNNING",
            "COMPLETED",
            "DEAD",
            "CANCELLED",
            "DONE/MIN",
            "PAUSED",
            "OLDEST",
            "PENDING",
            "LIMITS"
        ]
    );
    let email_row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        email_row[..10],
        ["email", "0", "2", "1", "0", "0", "0", "0", "0", "no"]
    );
    assert!(email_row[10].ends_with('s'), "an age: {table}");
    assert_eq!(email_row[11..], ["-"], "no limits: {table}");
    let pdf_row: Vec<&str> = lines[2].split_whitespace().collect();
    // The cancelled job finished within the last minute.
    assert_eq!(
        pdf_row,
        ["pdf", "0", "0", "0", "1", "0", "1", "1", "1", "no", "-", "-"]
    );
    assert_eq!(pdf["finished_last_minute"], 1);

    // Pause and resume: the state shows in stats, and survives in the store.
    assert_eq!(s.ok(&["pause", "email"]), "queue email paused\n");
    let stats: Vec<Value> = s.json(&["stats"]);
    let paused: Vec<(&str, bool)> = stats
        .iter()
        .map(|q| (q["name"].as_str().unwrap(), q["paused"].as_bool().unwrap()))
        .collect();
    assert_eq!(paused, [("email", true), ("pdf", false)]);
    assert_eq!(s.ok(&["resume", "email"]), "queue email resumed\n");
    let stats: Vec<Value> = s.json(&["stats"]);
    assert_eq!(stats[0]["paused"], false);

    let queues = s.ok(&["queues"]);
    assert_eq!(
        queues,
        "QUEUE  JOBS  LIMITS\nemail     3  -\npdf       3  -\n"
    );
    let queues: Vec<Value> = s.json(&["queues"]);
    assert_eq!(queues[0]["total"], 3);
    assert_eq!(queues[1]["counts"]["dead"], 1);
}

/// `email`'s limits as the store holds them, read back through the library.
fn stored_limits(s: &Store) -> QueueLimits {
    let queues = s.block(s.backend.queues()).unwrap();
    queues
        .into_iter()
        .find(|q| q.name == "email")
        .map(|q| q.limits)
        .unwrap_or_default()
}

/// The `limits` of `email` in `stats --json` and `queues --json`, which agree.
fn listed_limits(s: &Store) -> Value {
    let email = |queues: Vec<Value>| {
        queues
            .into_iter()
            .find(|q| q["name"] == "email")
            .map(|q| q["limits"].clone())
            .expect("email is listed")
    };
    let from_stats = email(s.json(&["stats"]));
    assert_eq!(from_stats, email(s.json(&["queues"])));
    from_stats
}

/// Limits are set, shown, replaced (the whole set) and cleared in the store; `stats` and
/// `queues` show them.
fn limits_set_show_and_clear(s: Store) {
    s.mail("a@example.com");
    s.render(1);
    assert_eq!(s.ok(&["limit", "email"]), "queue email: no limits\n");

    let set = s.ok(&[
        "limit",
        "email",
        "--concurrency",
        "16",
        "--rate",
        "1000/1s",
        "--max-depth",
        "10000",
    ]);
    let line = "queue email: concurrency 16, rate 1000/1s, max depth 10000\n";
    assert_eq!(set, line);
    let full = QueueLimits::default()
        .concurrency(16)
        .rate(Rate::new(1000, Duration::from_secs(1)))
        .max_depth(10_000);
    assert_eq!(stored_limits(&s), full);
    assert_eq!(s.ok(&["limit", "email"]), line, "read back by a second run");
    let shown: Value = s.json(&["limit", "email"]);
    assert_eq!(
        shown,
        serde_json::json!({
            "queue": "email",
            "concurrency": 16,
            "rate": {"limit": 1000, "period": 1000},
            "max_depth": 10000,
        })
    );
    assert_eq!(
        listed_limits(&s),
        serde_json::json!({
            "concurrency": 16,
            "rate": {"limit": 1000, "period": 1000},
            "max_depth": 10000,
        })
    );
    let stats = s.ok(&["stats"]);
    let email_row = stats.lines().find(|l| l.starts_with("email ")).unwrap();
    assert!(
        email_row.ends_with("  concurrency 16, rate 1000/1s, max depth 10000"),
        "{stats}"
    );
    let pdf_row = stats.lines().find(|l| l.starts_with("pdf ")).unwrap();
    assert!(pdf_row.ends_with("  -"), "pdf has none: {stats}");
    assert_eq!(
        s.ok(&["queues"]),
        "QUEUE  JOBS  LIMITS\n\
         email     1  concurrency 16, rate 1000/1s, max depth 10000\n\
         pdf       1  -\n"
    );

    // The options replace the whole set: the concurrency and depth limits are gone.
    let replaced: Value = s.json(&["limit", "email", "--rate", "10/m"]);
    assert_eq!(
        replaced,
        serde_json::json!({
            "queue": "email",
            "concurrency": null,
            "rate": {"limit": 10, "period": 60_000},
            "max_depth": null,
        })
    );
    let rate_only = QueueLimits::default().rate(Rate::new(10, Duration::from_secs(60)));
    assert_eq!(stored_limits(&s), rate_only);
    assert_eq!(s.ok(&["limit", "email"]), "queue email: rate 10/1m\n");
    assert_eq!(listed_limits(&s)["rate"]["period"], 60_000);

    assert_eq!(
        s.ok(&["limit", "email", "--clear"]),
        "queue email: no limits\n"
    );
    assert_eq!(stored_limits(&s), QueueLimits::default());
    assert_eq!(s.ok(&["limit", "email"]), "queue email: no limits\n");
    assert_eq!(
        listed_limits(&s),
        serde_json::json!({"concurrency": null, "rate": null, "max_depth": null})
    );

    // A queue with no jobs yet can be limited, and is then listed.
    assert_eq!(
        s.ok(&["limit", "sms", "--max-depth", "5"]),
        "queue sms: max depth 5\n"
    );
    let queues: Vec<Value> = s.json(&["queues"]);
    let sms = queues.iter().find(|q| q["name"] == "sms").expect("listed");
    assert_eq!(
        (sms["total"].as_u64(), sms["limits"]["max_depth"].as_u64()),
        (Some(0), Some(5))
    );
}

/// A bad rate, a concurrency of 0 or `--clear` with a limit is a usage error (exit 2) that
/// leaves the stored limits as they were.
fn bad_limits_change_nothing(s: Store) {
    s.mail("a@example.com");
    s.ok(&["limit", "email", "--concurrency", "3", "--rate", "5/1s"]);
    let before = QueueLimits::default()
        .concurrency(3)
        .rate(Rate::new(5, Duration::from_secs(1)));
    assert_eq!(stored_limits(&s), before);

    for (args, text) in [
        (&["limit", "email", "--rate", "fast"][..], "bad rate `fast`"),
        (
            &["limit", "email", "--rate", "0/1s"],
            "the starts must be at least 1",
        ),
        (
            &["limit", "email", "--rate", "10/fortnight"],
            "bad rate `10/fortnight`",
        ),
        (&["limit", "email", "--concurrency", "0"], "at least 1"),
        (
            &["limit", "email", "--concurrency=-1"],
            "invalid value '-1' for '--concurrency <N>'",
        ),
        (&["limit", "email", "--max-depth", "lots"], "--max-depth"),
        (
            &["limit", "email", "--clear", "--concurrency", "2"],
            "cannot be used",
        ),
        (&["limit"], "QUEUE"),
    ] {
        assert_fails(&s.run(args), 2, text);
        assert_eq!(stored_limits(&s), before, "jobs {args:?} changed nothing");
    }
    assert_eq!(
        s.ok(&["limit", "email"]),
        "queue email: concurrency 3, rate 5/1s\n"
    );
}

/// Filters by queue, status, name, tag and age; pages follow `--after`.
fn list_filters_and_pages(s: Store) {
    let mails: Vec<JobId> = (0..5)
        .map(|i| s.mail(&format!("{i}@example.com")))
        .collect();
    let tagged = s
        .block(
            SendMail::new("vip@example.com".into())
                .tag("vip")
                .enqueue(&s.backend),
        )
        .unwrap()
        .id();
    let pdf = s.render(1);
    let dead = s.kill_next("pdf");
    assert_eq!(dead, pdf);

    // Pages of two, oldest first, each naming the next.
    let first: Page = s.json(&["list", "--queue", "email", "--limit", "2"]);
    let ids: Vec<JobId> = first.jobs.iter().map(|j| j.id).collect();
    assert_eq!(ids, mails[..2]);
    assert_eq!(first.next, Some(mails[1]));
    let table = s.ok(&["list", "--queue", "email", "--limit", "2"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        ["ID", "NAME", "QUEUE", "STATUS", "ATTEMPT", "CREATED", "LAST", "ERROR"]
    );
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        row[..5],
        [
            mails[0].to_string().as_str(),
            "mail.send",
            "email",
            "pending",
            "0/3"
        ]
    );
    assert!(row[5].ends_with('Z'), "RFC 3339 UTC: {}", row[5]);
    assert_eq!(lines[3], format!("next page: --after {}", mails[1]));
    let after = mails[1].to_string();
    let second: Page = s.json(&[
        "list", "--queue", "email", "--limit", "2", "--after", &after,
    ]);
    let ids: Vec<JobId> = second.jobs.iter().map(|j| j.id).collect();
    assert_eq!(ids, mails[2..4]);
    let after = mails[3].to_string();
    let last = s.ok(&[
        "list", "--queue", "email", "--limit", "2", "--after", &after,
    ]);
    assert_eq!(last.lines().count(), 3, "two rows and no next page: {last}");
    assert!(!last.contains("next page"));
    assert!(last.contains(&mails[4].to_string()) && last.contains(&tagged.to_string()));

    // Filters.
    let ids = |args: &[&str]| -> Vec<JobId> {
        let page: Page = s.json(args);
        page.jobs.iter().map(|j| j.id).collect()
    };
    assert_eq!(ids(&["list", "--tag", "vip"]), [tagged]);
    assert_eq!(ids(&["list", "--status", "dead"]), [dead]);
    assert_eq!(ids(&["list", "--name", "pdf.render"]), [dead]);
    assert_eq!(ids(&["list", "--queue", "email", "--status", "dead"]), []);
    assert_eq!(ids(&["list", "--since", "1h"]).len(), 7);
    assert_eq!(ids(&["list", "--since", "1ms"]), [], "all enqueued earlier");
    let dead_row = s.ok(&["list", "--status", "dead"]);
    assert!(
        dead_row.lines().nth(1).unwrap().ends_with("  down"),
        "{dead_row}"
    );
    assert_eq!(s.ok(&["list", "--queue", "none"]), "no jobs\n");
    assert_fails(
        &s.run(&["list", "--status", "lost"]),
        2,
        "unknown job status `lost`",
    );
    let help = s.ok(&["list", "--help"]);
    assert!(
        help.contains("(waiting, scheduled, pending, running, completed, dead, cancelled)"),
        "{help}"
    );
}

/// `show` of a dead job: payload, attempts, each attempt's error with its chain, times.
fn show_a_dead_job(s: Store) {
    let id = s
        .block(
            SendMail::new("a@example.com".into())
                .attempts(2)
                .tag("order:42")
                .unique("mail:a")
                .enqueue(&s.backend),
        )
        .unwrap()
        .id();
    let first = s.fetch("email");
    let mut report = ErrorReport::new(ErrorKind::Retryable, "smtp down: connection refused");
    report.chain = vec!["connection refused".into()];
    s.fail(&first, report, true);
    let second = s.fetch("email");
    s.fail(
        &second,
        ErrorReport::new(ErrorKind::Fatal, "mailbox gone"),
        false,
    );
    let stored = s.record(id);

    let text = s.ok(&["show", &id.to_string()]);
    for line in [
        format!("id          {id}"),
        "name        mail.send".into(),
        "status      dead (fatal error)".into(),
        "attempts    2 of 2".into(),
        "tags        mail, order:42".into(),
        "unique key  mail:a".into(),
        "lease       -".into(),
        "progress    0%".into(),
        "result: -".into(),
        "payload:".into(),
        "    \"to\": \"a@example.com\"".into(),
        format!(
            "created     {}",
            stored
                .created_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ),
        format!(
            "finished    {}",
            stored
                .finished_at
                .unwrap()
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ),
        "    caused by: connection refused".into(),
    ] {
        assert!(text.lines().any(|l| l == line), "`{line}` in\n{text}");
    }
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  attempt "))
        .collect();
    assert_eq!(errors.len(), 2, "{text}");
    assert!(errors[0].starts_with("  attempt 1 retryable at "));
    assert!(errors[0].ends_with("Z: smtp down: connection refused"));
    assert!(
        errors[1].starts_with("  attempt 2 fatal at ") && errors[1].ends_with(": mailbox gone")
    );

    let shown: JobRecord = s.json(&["show", &id.to_string()]);
    assert_eq!(shown.errors, stored.errors);
    assert_eq!(shown.payload.get(), stored.payload.get());
    assert_eq!((shown.status, shown.attempt), (JobStatus::Dead, 2));

    // Unknown ids exit 4, malformed ones 2.
    let missing = JobId::new().to_string();
    assert_fails(
        &s.run(&["show", &missing]),
        4,
        &format!("job {missing} not found"),
    );
    assert_fails(&s.run(&["show", "42"]), 2, "invalid value '42'");
}

/// Retry one job by id, then by filter (applied by the store); no filter is refused.
fn retry_by_id_and_filter(s: Store) {
    let pdfs: Vec<JobId> = (0..3).map(|i| s.render(i)).collect();
    let tagged = s
        .block(Render::new(9).tag("t1").enqueue(&s.backend))
        .unwrap()
        .id();
    let mail = s.mail("a@example.com");
    for _ in 0..4 {
        s.kill_next("pdf");
    }
    assert_eq!(s.kill_next("email"), mail);

    assert_eq!(
        s.ok(&["retry", &mail.to_string()]),
        format!("retried job {mail}\n")
    );
    assert_eq!(s.status(mail), JobStatus::Pending);
    assert_eq!(s.record(mail).attempt, 0, "fresh attempts");
    assert_fails(
        &s.run(&["retry", &mail.to_string()]),
        1,
        "is pending: cannot retry it",
    );

    assert_fails(&s.run(&["retry"]), 2, "pass --all");
    assert_fails(
        &s.run(&["retry", "--status", "dead", &mail.to_string()]),
        2,
        "cannot be used",
    );
    assert!(
        pdfs.iter().all(|&id| s.status(id) == JobStatus::Dead),
        "nothing retried"
    );

    let out = s.ok(&["retry", "--queue", "pdf", "--status", "dead", "--tag", "t1"]);
    assert_eq!(out, "retried 1 job\n");
    assert_eq!(s.status(tagged), JobStatus::Pending);
    let out: Value = s.json(&["retry", "--queue", "pdf", "--status", "dead"]);
    assert_eq!(out, serde_json::json!({"action": "retry", "changed": 3}));
    assert!(pdfs.iter().all(|&id| s.status(id) == JobStatus::Pending));
    assert_eq!(
        s.ok(&["retry", "--queue", "pdf", "--status", "dead"]),
        "retried 0 jobs\n"
    );

    let missing = JobId::new().to_string();
    assert_fails(&s.run(&["retry", &missing]), 4, "not found");
}

/// Cancel and delete by id and by filter; purge finished jobs older than a duration.
fn cancel_delete_and_purge(s: Store) {
    let mails: Vec<JobId> = (0..3)
        .map(|i| s.mail(&format!("{i}@example.com")))
        .collect();
    let out: Value = s.json(&["cancel", &mails[0].to_string()]);
    assert_eq!(
        out,
        serde_json::json!({"action": "cancel", "id": mails[0], "changed": 1})
    );
    assert_eq!(s.status(mails[0]), JobStatus::Cancelled);
    assert_fails(
        &s.run(&["cancel", &mails[0].to_string()]),
        1,
        "is cancelled: cannot cancel it",
    );
    assert_fails(&s.run(&["cancel"]), 2, "pass --all");
    assert_eq!(s.ok(&["cancel", "--queue", "email"]), "cancelled 2 jobs\n");
    assert!(mails.iter().all(|&id| s.status(id) == JobStatus::Cancelled));

    assert_eq!(
        s.ok(&["delete", &mails[0].to_string()]),
        format!("deleted job {}\n", mails[0])
    );
    assert!(matches!(
        s.block(s.backend.job(mails[0])),
        Err(jobs::Error::NotFound(_))
    ));
    assert_fails(&s.run(&["delete", &mails[0].to_string()]), 4, "not found");
    assert_eq!(
        s.ok(&["delete", "--status", "cancelled"]),
        "deleted 2 jobs\n"
    );
    assert!(matches!(
        s.block(s.backend.job(mails[1])),
        Err(jobs::Error::NotFound(_))
    ));

    // Purge: a completed and a dead job, finished just now.
    s.render(1);
    s.render(2);
    let done = s.complete_next("pdf");
    let dead = s.kill_next("pdf");
    assert!(s
        .ok(&["purge", "--completed", "--older-than", "1h"])
        .starts_with("purged 0 completed jobs"));
    assert_eq!(s.status(done), JobStatus::Completed);
    let out: Value = s.json(&["purge", "--completed", "--older-than", "0s"]);
    assert_eq!(
        (out["status"].as_str(), out["purged"].as_u64()),
        (Some("completed"), Some(1))
    );
    assert!(matches!(
        s.block(s.backend.job(done)),
        Err(jobs::Error::NotFound(_))
    ));
    assert_eq!(s.status(dead), JobStatus::Dead, "only the completed ones");
    assert_fails(
        &s.run(&["purge", "--older-than", "1d"]),
        2,
        "--completed|--dead|--cancelled",
    );
    assert_fails(
        &s.run(&["purge", "--dead", "--older-than", "soon"]),
        2,
        "--older-than",
    );
    assert!(s
        .ok(&["purge", "--dead", "--older-than", "0s"])
        .starts_with("purged 1 dead job "));

    assert_eq!(s.ok(&["delete", "--all"]), "deleted 0 jobs\n");
}

/// A running worker is listed with the job it runs, its cron schedule is listed with its next
/// ticks, and a pending job of a name it does not know is stranded.
fn workers_schedules_stranded(s: Store) {
    assert_eq!(s.ok(&["workers"]), "no workers\n");
    assert_eq!(s.ok(&["schedules"]), "no schedules\n");
    let worker_id = format!("cli-worker-{}", s.space);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = jobs::Worker::new(s.backend.clone())
        .queues(["cli_work"])
        .concurrency(2)
        .id(&worker_id)
        .run_until(async {
            let _ = stopped.await;
        });
    let running = s.rt.spawn(worker);

    // A job of a name no worker runs, in the worker's queue.
    let mut legacy = jobs::Enqueue::from(Hold::new("never".into()))
        .to_new_job(chrono::Utc::now())
        .unwrap();
    legacy.name = "work.legacy".into();
    let legacy_id = legacy.id;
    let params = EnqueueParams {
        jobs: vec![legacy],
        now: chrono::Utc::now(),
    };
    s.block(s.backend.enqueue(params)).unwrap();

    let key = s.space.clone();
    let held: JobHandle<Hold> = s.block(Hold::new(key.clone()).enqueue(&s.backend)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.status(held.id()) != JobStatus::Running {
        assert!(Instant::now() < deadline, "the worker runs the job");
        std::thread::sleep(Duration::from_millis(20));
    }

    let workers: Vec<WorkerSummary> = s.json(&["workers"]);
    assert_eq!(workers.len(), 1, "{workers:?}");
    let w = &workers[0];
    assert_eq!(w.worker.id, worker_id);
    assert_eq!(
        (w.worker.queues.as_slice(), w.worker.concurrency),
        (&["cli_work".to_string()][..], 2)
    );
    assert_eq!(w.worker.pid, std::process::id());
    assert_eq!(w.running, [held.id()]);
    let table = s.ok(&["workers"]);
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[0], worker_id);
    assert_eq!(row[2], std::process::id().to_string());
    assert_eq!(row[3..5], ["cli_work", "2"]);
    assert_eq!(row[7..], ["1", held.id().to_string().as_str()]);

    let schedules: Vec<ScheduleSummary> = s.json(&["schedules"]);
    assert_eq!(schedules.len(), 1, "{schedules:?}");
    let nightly = &schedules[0];
    assert_eq!(
        (
            nightly.schedule.name.as_str(),
            nightly.schedule.queue.as_str(),
            nightly.schedule.expression.as_str(),
            nightly.schedule.timezone.as_str()
        ),
        ("work.nightly", "cli_work", "0 3 * * *", "Europe/Paris")
    );
    assert_eq!(nightly.next.len(), 3);
    let table = s.ok(&["schedules"]);
    let row = table.lines().nth(1).unwrap();
    assert!(
        row.starts_with("work.nightly  cli_work  0 3 * * *  Europe/Paris"),
        "{table}"
    );
    let next = nightly.next[0].to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    assert!(row.contains(&next), "{table}");

    let stranded: Vec<Stranded> = s.json(&["stranded"]);
    assert_eq!(stranded.len(), 1, "{stranded:?}");
    assert_eq!(
        (
            stranded[0].queue.as_str(),
            stranded[0].name.as_str(),
            stranded[0].jobs,
            stranded[0].oldest
        ),
        ("cli_work", "work.legacy", 1, legacy_id)
    );
    let table = s.ok(&["stranded"]);
    assert!(
        table
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("cli_work  work.legacy     1  "),
        "{table}"
    );

    gate(&key).notify_one();
    assert_eq!(s.block(held.wait(&s.backend)).unwrap(), 7);
    stop.send(()).unwrap();
    s.block(running).unwrap().unwrap();
    assert_eq!(s.ok(&["workers"]), "no workers\n", "deregistered at stop");
}

/// The expected schema version: the highest migration number of jobs-postgres.
fn latest_migration() -> i64 {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../jobs-postgres/migrations");
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.split('_').next()?.parse::<i64>().ok()
        })
        .max()
        .unwrap()
}

#[test]
fn migrate_applies_and_shows_the_version_on_postgres() {
    let s = Store::fresh(Kind::Postgres);
    let version = latest_migration();
    assert_eq!(
        s.ok(&["migrate"]),
        format!("schema {} is at version {version}\n", s.space)
    );
    let out: Value = s.json(&["migrate"]);
    assert_eq!(
        out,
        serde_json::json!({"schema": s.space, "version": version, "recounted": false})
    );

    // Counts gone wrong (as after an older release's workers ran beside this one) are
    // counted again from the rows.
    s.mail("a@example.com");
    let pg = s
        .backend
        .downcast_ref::<jobs::postgres::PgBackend>()
        .expect("a PostgreSQL backend");
    let skew = format!(
        "INSERT INTO \"{}\".finished_counts (queue, status, n) VALUES ('email', 'completed', 7)",
        s.space
    );
    s.block(jobs::postgres::sqlx::query(&skew).execute(pg.pool()))
        .unwrap();
    let completed = |s: &Store| -> u64 {
        let stats: Vec<Value> = s.json(&["stats"]);
        stats[0]["counts"]["completed"].as_u64().unwrap()
    };
    assert_eq!(completed(&s), 7);
    assert_eq!(
        s.ok(&["migrate", "--recount"]),
        format!(
            "schema {} is at version {version}; finished jobs counted again\n",
            s.space
        )
    );
    assert_eq!(completed(&s), 0);
}

#[test]
fn migrate_is_refused_on_redis() {
    let s = Store::fresh(Kind::Redis);
    assert_fails(
        &s.run(&["migrate"]),
        1,
        "migrations are a PostgreSQL matter",
    );
}

#[test]
fn bad_urls_exit_2_and_unreachable_servers_exit_3() {
    assert_fails(&run("", &["stats"]), 2, "pass --url URL or set JOBS_URL");
    assert_fails(
        &run("mongodb://localhost", &["stats"]),
        2,
        "unsupported backend URL scheme",
    );
    assert_fails(&run("localhost", &["stats"]), 2, "not a backend URL");
    assert_fails(
        &run("redis://127.0.0.1:6379?colour=red", &["stats"]),
        2,
        "colour",
    );
    assert_fails(
        &run(
            "postgres://postgres@127.0.0.1:5432/test?schema=Bad-Name",
            &["stats"],
        ),
        2,
        "schema",
    );
    assert_fails(
        &run("redis://127.0.0.1:1", &["stats"]),
        3,
        "cannot connect to",
    );
    assert_fails(
        &run("postgres://postgres@127.0.0.1:1/x", &["stats"]),
        3,
        "cannot connect to",
    );
    assert_fails(
        &run("memory://", &["frobnicate"]),
        2,
        "unrecognized subcommand",
    );
}

#[test]
fn the_url_comes_from_jobs_url_too() {
    let s = Store::fresh(Kind::Redis);
    s.mail("a@example.com");
    let out = Command::new(env!("CARGO_BIN_EXE_jobs"))
        .env("JOBS_URL", &s.url)
        .arg("queues")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "QUEUE  JOBS  LIMITS\nemail     1  -\n"
    );
}

#[test]
fn watch_prints_a_line_per_refresh_until_interrupted() {
    use std::io::{BufRead, BufReader};

    let s = Store::fresh(Kind::Redis);
    s.mail("a@example.com");
    let mut child = Command::new(env!("CARGO_BIN_EXE_jobs"))
        .args(["--url", &s.url, "--json", "watch", "--interval", "100ms"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for _ in 0..2 {
        let line = lines.next().unwrap().unwrap();
        let snapshot: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(snapshot["queues"][0]["name"], "email");
        assert_eq!(snapshot["queues"][0]["counts"]["pending"], 1);
        assert_eq!(snapshot["queues"][0]["counts"]["waiting"], 0);
        assert!(snapshot["at"].is_string());
    }
    let signalled = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(signalled.success());
    assert!(child.wait().unwrap().success(), "Ctrl-C ends it cleanly");
}

#[test]
fn watch_draws_the_counts_of_each_status() {
    use std::io::{BufRead, BufReader};

    let s = Store::fresh(Kind::Redis);
    s.mail("a@example.com");
    s.mail("b@example.com");
    let mut child = Command::new(env!("CARGO_BIN_EXE_jobs"))
        .args(["--url", &s.url, "watch", "--interval", "100ms"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || lines.next().unwrap().unwrap();
    let first = next();
    assert!(first.starts_with("\x1b[2J\x1b[H"), "{first:?}");
    assert!(
        first.ends_with("(every 100ms, Ctrl-C to stop)"),
        "{first:?}"
    );
    assert_eq!(next(), "");
    let header: Vec<String> = next().split_whitespace().map(String::from).collect();
    assert_eq!(
        header,
        [
            "QUEUE",
            "WAITING",
            "PENDING",
            "SCHEDULED",
            "RUNNING",
            "COMPLETED",
            "DEAD",
            "CANCELLED"
        ]
    );
    let row: Vec<String> = next().split_whitespace().map(String::from).collect();
    assert_eq!(row, ["email", "0", "2", "0", "0", "0", "0", "0"]);
    // The next refresh: by then it listens for Ctrl-C (it starts to after the first).
    assert!(next().starts_with("\x1b[2J\x1b[H"), "a second refresh");
    let signalled = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(signalled.success());
    assert!(child.wait().unwrap().success(), "Ctrl-C ends it cleanly");
}
