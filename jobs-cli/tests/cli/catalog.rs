//! `jobs types`, `jobs schema` and `jobs enqueue`: the catalog as workers publish it, written
//! straight into the store through `Backend::publish_types` (no worker runs), read and used by
//! the real binary; what `enqueue` stored (or did not) is read back through the backend.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use chrono::TimeZone;
use jobs::{Backoff, JobFilter, JobId, JobStatus, Operations, PageRequest};
use jobs_core::{Backend, JobTypeInfo, PublishTypesParams};
use serde_json::{json, Value};

use super::{assert_fails, Kind, Run, Store};

/// The payload schema of `report.build` version 1: a page number.
fn schema_v1() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "BuildReport",
        "type": "object",
        "properties": { "page": { "type": "integer", "format": "uint32", "minimum": 0 } },
        "required": ["page"]
    })
}

/// The payload schema of `report.build` version 2: a page count (a required integer of at
/// least 1) and a title.
fn schema_v2() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "BuildReport",
        "type": "object",
        "properties": {
            "pages": { "type": "integer", "format": "uint32", "minimum": 1 },
            "title": { "type": "string" }
        },
        "required": ["pages", "title"]
    })
}

/// A version of `report.build`, as a worker of it publishes it.
fn report(version: u32, schema: Value) -> JobTypeInfo {
    JobTypeInfo {
        name: "report.build".into(),
        version,
        queue: "reports".into(),
        max_attempts: 5,
        priority: 3,
        backoff: Backoff::exponential(Duration::from_secs(2)),
        timeout: Some(Duration::from_secs(120)),
        tags: vec!["reports".into()],
        schema: Some(schema),
    }
}

/// A type published without a schema (a hand-written `Job` impl, say).
fn ping() -> JobTypeInfo {
    JobTypeInfo {
        name: "ops.ping".into(),
        version: 1,
        queue: "ops".into(),
        max_attempts: 1,
        priority: 0,
        backoff: Backoff::fixed(Duration::from_secs(1)),
        timeout: None,
        tags: Vec::new(),
        schema: None,
    }
}

/// When the types were published: 90 s ago, to the millisecond (as every store keeps it).
fn published_at() -> jobs::Timestamp {
    let ms = chrono::Utc::now().timestamp_millis() - 90_000;
    chrono::Utc.timestamp_millis_opt(ms).single().unwrap()
}

/// Publishes `ping` and both versions of `report.build` at `at`.
fn publish(s: &Store, at: jobs::Timestamp) {
    let params = PublishTypesParams {
        types: vec![report(2, schema_v2()), ping(), report(1, schema_v1())],
        now: at,
    };
    s.block(s.backend.publish_types(params)).expect("publish");
}

/// Every job in the store, whatever its status.
fn stored_jobs(s: &Store) -> Vec<jobs::JobRecord> {
    s.block(s.backend.jobs(&JobFilter::new(), PageRequest::default()))
        .expect("list")
        .jobs
}

/// Runs the binary on `s` with `args`, `input` on its stdin.
fn run_with_stdin(s: &Store, args: &[&str], input: &str) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_jobs"))
        .env_remove("JOBS_URL")
        .args(["--url", &s.url])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run jobs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("jobs exits");
    Run {
        code: out.status.code().expect("exited"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// `types` lists each published version, `schema` prints the newest one's schema (or the one
/// asked for, or the whole entry with `--json`), and unknown names and versions exit 4.
fn types_and_schemas(s: Store) {
    assert_eq!(s.ok(&["types"]), "no job types\n");
    let none: Vec<Value> = s.json(&["types"]);
    assert!(none.is_empty());
    let at = published_at();
    publish(&s, at);

    let table = s.ok(&["types"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    assert_eq!(
        lines[0], "NAME          VERSION  QUEUE    ATTEMPTS  PUBLISHED",
        "{table}"
    );
    for (line, start) in lines[1..].iter().zip([
        "ops.ping            1  ops             1  ",
        "report.build        1  reports         5  ",
        "report.build        2  reports         5  ",
    ]) {
        let age = line
            .strip_prefix(start)
            .unwrap_or_else(|| panic!("{table}"));
        assert!(
            ["1m 30s ago", "1m 31s ago", "1m 32s ago"].contains(&age),
            "published 90 s ago: {table}"
        );
    }

    let catalog: Vec<Value> = s.json(&["types"]);
    let listed: Vec<(&str, u64)> = catalog
        .iter()
        .map(|t| {
            (
                t["info"]["name"].as_str().unwrap(),
                t["info"]["version"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [("ops.ping", 1), ("report.build", 1), ("report.build", 2)]
    );
    let v2: JobTypeInfo = serde_json::from_value(catalog[2]["info"].clone()).unwrap();
    assert_eq!(v2, report(2, schema_v2()));
    let published: jobs::Timestamp =
        serde_json::from_value(catalog[2]["published_at"].clone()).unwrap();
    assert_eq!(published, at);

    // The newest version's schema, pretty-printed; an older one by --version.
    let newest = s.ok(&["schema", "report.build"]);
    assert_eq!(
        newest,
        format!("{}\n", serde_json::to_string_pretty(&schema_v2()).unwrap())
    );
    let v1: Value =
        serde_json::from_str(&s.ok(&["schema", "report.build", "--version", "1"])).expect("JSON");
    assert_eq!(v1, schema_v1());
    let entry: Value = s.json(&["schema", "report.build", "--version", "1"]);
    assert_eq!(entry["info"]["version"], 1);
    assert_eq!(entry["info"]["queue"], "reports");
    assert_eq!(entry["info"]["schema"], schema_v1());
    assert_eq!(
        serde_json::from_value::<jobs::Timestamp>(entry["published_at"].clone()).unwrap(),
        at
    );
    let newest_entry: Value = s.json(&["schema", "report.build"]);
    assert_eq!(newest_entry["info"]["version"], 2);

    assert_fails(
        &s.run(&["schema", "report.nope"]),
        4,
        "no job type `report.nope` is published",
    );
    assert_fails(
        &s.run(&["schema", "report.build", "--version", "7"]),
        4,
        "job type `report.build` has no published version 7 (published: 1, 2)",
    );
    assert_fails(
        &s.run(&["schema", "report.nope", "--version", "1"]),
        4,
        "no job type `report.nope` is published",
    );
    assert_fails(
        &s.run(&["schema", "ops.ping"]),
        1,
        "job type `ops.ping` (version 1) published no schema",
    );
    let ping_entry: Value = s.json(&["schema", "ops.ping"]);
    assert_eq!(ping_entry["info"]["schema"], Value::Null);
}

/// `enqueue` stores a job of the newest version with the type's defaults and prints its id;
/// a payload that breaks the schema is refused with every problem listed, as are bad JSON and
/// an unknown name, and then nothing is stored.
fn enqueue_by_name(s: Store) {
    publish(&s, published_at());

    let payload = json!({ "pages": 12, "title": "Q3" });
    let out = s.ok(&["enqueue", "report.build", "--payload", &payload.to_string()]);
    let id: JobId = out
        .strip_suffix('\n')
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("one id: {out:?}"));
    let job = s.record(id);
    assert_eq!(
        (&*job.name, job.version, &*job.queue),
        ("report.build", 2, "reports")
    );
    assert_eq!(
        serde_json::from_str::<Value>(job.payload.get()).unwrap(),
        payload
    );
    assert_eq!(job.status, JobStatus::Pending);
    assert_eq!((job.max_attempts, job.priority), (5, 3));
    assert_eq!(job.backoff, Backoff::exponential(Duration::from_secs(2)));
    assert_eq!(job.timeout, Some(Duration::from_secs(120)));
    assert_eq!(job.tags, ["reports"]);

    // From stdin, with --json: the `Enqueued`.
    let piped = run_with_stdin(
        &s,
        &["--json", "enqueue", "report.build", "--payload", "-"],
        r#"{"pages": 1, "title": "cover"}"#,
    );
    assert_eq!(piped.code, 0, "{piped:?}");
    let enqueued: Value = serde_json::from_str(&piped.stdout).expect("JSON");
    assert_eq!(enqueued["duplicate"], false);
    let second: JobId = serde_json::from_value(enqueued["id"].clone()).unwrap();
    let job = s.record(second);
    assert_eq!(
        serde_json::from_str::<Value>(job.payload.get()).unwrap(),
        json!({ "pages": 1, "title": "cover" })
    );
    let ids: Vec<JobId> = stored_jobs(&s).iter().map(|j| j.id).collect();
    assert_eq!(ids, [id, second]);

    // Every problem, on one line; nothing stored.
    let bad = s.run(&[
        "enqueue",
        "report.build",
        "--payload",
        r#"{"pages": "twelve"}"#,
    ]);
    assert_fails(
        &bad,
        2,
        "payload does not match the schema of job `report.build` (version 2): ",
    );
    assert!(bad.stderr.contains("at `/pages`: "), "{bad:?}");
    assert!(
        bad.stderr.contains(r#""twelve" is not of type "integer""#),
        "{bad:?}"
    );
    assert!(
        bad.stderr.contains(r#""title" is a required property"#),
        "{bad:?}"
    );
    let zero = s.run(&[
        "enqueue",
        "report.build",
        "--payload",
        r#"{"pages": 0, "title": "x"}"#,
    ]);
    assert_fails(&zero, 2, "at `/pages`: 0 is less than the minimum of 1");

    // Not JSON, from the argument or from stdin.
    assert_fails(
        &s.run(&["enqueue", "report.build", "--payload", "{pages: 1}"]),
        2,
        "--payload is not JSON: key must be a string at line 1 column 2",
    );
    assert_fails(
        &run_with_stdin(&s, &["enqueue", "report.build", "--payload", "-"], ""),
        2,
        "the payload read from stdin is not JSON: EOF while parsing a value",
    );
    assert_fails(
        &s.run(&["enqueue", "report.nope", "--payload", "{}"]),
        4,
        "no job type `report.nope` is published",
    );
    assert_fails(
        &s.run(&["enqueue", "report.build"]),
        2,
        "the following required arguments were not provided: --payload <JSON>",
    );
    let ids: Vec<JobId> = stored_jobs(&s).iter().map(|j| j.id).collect();
    assert_eq!(ids, [id, second], "nothing else was stored");

    // A type without a schema takes any JSON.
    let out = s.ok(&["enqueue", "ops.ping", "--payload", "[1, 2]"]);
    let ping: JobId = out.trim_end().parse().expect("an id");
    let job = s.record(ping);
    assert_eq!((&*job.name, &*job.queue), ("ops.ping", "ops"));
    assert_eq!(job.payload.get(), "[1,2]");
}

on_both!(types_and_schemas, types_pg, types_redis);
on_both!(enqueue_by_name, enqueue_pg, enqueue_redis);
