//! The commands: each reads or changes the store through [`Operations`] and returns what to
//! print, a table or one JSON document.

use std::fmt::Write as _;
use std::time::Duration;

use jobs::{
    AnyBackend, JobFilter, JobId, JobRecord, JobStatus, Operations, PageRequest, QueueCounts,
    QueueSummary, Timestamp,
};
use serde::Serialize;

use crate::format::{self, NONE};
use crate::table::Table;
use crate::Failure;

/// The longest last error `list` shows.
const ERROR_WIDTH: usize = 60;

/// A change to one job or to the jobs matching a filter.
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Action {
    /// Back to pending.
    Retry,
    /// Cancelled.
    Cancel,
    /// Deleted.
    Delete,
}

impl Action {
    /// The command's name.
    pub(crate) fn verb(self) -> &'static str {
        match self {
            Action::Retry => "retry",
            Action::Cancel => "cancel",
            Action::Delete => "delete",
        }
    }

    fn past(self) -> &'static str {
        match self {
            Action::Retry => "retried",
            Action::Cancel => "cancelled",
            Action::Delete => "deleted",
        }
    }
}

/// `items` as JSON, or the line `none` when there are none; `None` when the caller renders
/// them as a table.
pub(crate) fn json_or_none<T: Serialize>(
    items: &[T],
    json_out: bool,
    none: &str,
) -> Option<Result<String, Failure>> {
    if json_out {
        return Some(json(&items));
    }
    items.is_empty().then(|| Ok(format!("{none}\n")))
}

/// A value as pretty JSON, ending in a newline.
pub(crate) fn json<T: Serialize>(value: &T) -> Result<String, Failure> {
    let mut text = serde_json::to_string_pretty(value).map_err(jobs::Error::from)?;
    text.push('\n');
    Ok(text)
}

/// `1 job` / `3 jobs`.
fn jobs_count(n: u64) -> String {
    format!("{n} job{}", if n == 1 { "" } else { "s" })
}

/// A queue's counts with its oldest pending job, as `stats` prints it.
#[derive(Debug, Serialize)]
struct QueueStats {
    #[serde(flatten)]
    summary: QueueSummary,
    /// When the oldest pending job was enqueued.
    oldest_pending_at: Option<Timestamp>,
    /// How long it has waited, in seconds.
    oldest_pending_age_secs: Option<u64>,
}

/// `stats`: each queue's counts, the age of its oldest pending job and its limits.
pub(crate) async fn stats(backend: &AnyBackend, json_out: bool) -> Result<String, Failure> {
    let now = chrono::Utc::now();
    let mut stats = Vec::new();
    for summary in backend.queues().await? {
        let pending = JobFilter::new()
            .queue(&summary.name)
            .status(JobStatus::Pending);
        let page = backend
            .jobs(&pending, PageRequest::default().limit(1))
            .await?;
        let oldest = page.jobs.first().map(|j| j.created_at);
        stats.push(QueueStats {
            oldest_pending_age_secs: oldest.map(|at| format::age(at, now).as_secs()),
            oldest_pending_at: oldest,
            summary,
        });
    }
    if let Some(out) = json_or_none(&stats, json_out, "no queues") {
        return out;
    }
    let mut table = Table::new([
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
        "OLDEST PENDING",
        "LIMITS",
    ])
    .right(&[1, 2, 3, 4, 5, 6, 7, 8]);
    for s in &stats {
        let mut row = vec![s.summary.name.clone()];
        row.extend(counts_cells(&s.summary.counts));
        row.push(s.summary.finished_last_minute.to_string());
        row.push(if s.summary.paused { "yes" } else { "no" }.into());
        row.push(
            s.oldest_pending_age_secs
                .map(|secs| format::duration(Duration::from_secs(secs)))
                .unwrap_or_else(|| NONE.into()),
        );
        row.push(format::limits(&s.summary.limits));
        table.row(row);
    }
    Ok(table.render())
}

/// Pauses (`paused`) or resumes `queue`.
pub(crate) async fn pause(
    backend: &AnyBackend,
    queue: &str,
    paused: bool,
    json_out: bool,
) -> Result<String, Failure> {
    if paused {
        backend.pause_queue(queue).await?;
    } else {
        backend.resume_queue(queue).await?;
    }
    if json_out {
        return json(&serde_json::json!({ "queue": queue, "paused": paused }));
    }
    let state = if paused { "paused" } else { "resumed" };
    Ok(format!("queue {queue} {state}\n"))
}

/// The counts in the columns' order: waiting, pending, scheduled, running, completed, dead,
/// cancelled.
fn counts_cells(c: &QueueCounts) -> Vec<String> {
    [
        c.waiting,
        c.pending,
        c.scheduled,
        c.running,
        c.completed,
        c.dead,
        c.cancelled,
    ]
    .iter()
    .map(u64::to_string)
    .collect()
}

/// Every job of a queue, whatever its status.
fn total(c: &QueueCounts) -> u64 {
    JobStatus::ALL.iter().map(|&s| c.get(s)).sum()
}

/// A queue with its total, as `queues` prints it.
#[derive(Debug, Serialize)]
struct QueueTotal {
    #[serde(flatten)]
    summary: QueueSummary,
    /// Its jobs in every status.
    total: u64,
}

/// `queues`: the queues with their totals and limits.
pub(crate) async fn queues(backend: &AnyBackend, json_out: bool) -> Result<String, Failure> {
    let queues: Vec<QueueTotal> = backend
        .queues()
        .await?
        .into_iter()
        .map(|summary| QueueTotal {
            total: total(&summary.counts),
            summary,
        })
        .collect();
    if let Some(out) = json_or_none(&queues, json_out, "no queues") {
        return out;
    }
    let mut table = Table::new(["QUEUE", "JOBS", "LIMITS"]).right(&[1]);
    for q in &queues {
        table.row(vec![
            q.summary.name.clone(),
            q.total.to_string(),
            format::limits(&q.summary.limits),
        ]);
    }
    Ok(table.render())
}

/// `list`: a page of the jobs matching `filter`, and the `--after` of the next page.
pub(crate) async fn list(
    backend: &AnyBackend,
    json_out: bool,
    filter: &JobFilter,
    limit: usize,
    after: Option<JobId>,
) -> Result<String, Failure> {
    let page = backend.jobs(filter, PageRequest { after, limit }).await?;
    if json_out {
        return json(&page);
    }
    if page.jobs.is_empty() {
        return Ok("no jobs\n".into());
    }
    let mut table = Table::new([
        "ID",
        "NAME",
        "QUEUE",
        "STATUS",
        "ATTEMPT",
        "CREATED",
        "LAST ERROR",
    ]);
    for job in &page.jobs {
        table.row(vec![
            job.id.to_string(),
            job.name.to_string(),
            job.queue.to_string(),
            job.status.to_string(),
            format!("{}/{}", job.attempt, job.max_attempts),
            format::time(job.created_at),
            job.last_error()
                .map(|e| format::shorten(&e.message, ERROR_WIDTH))
                .unwrap_or_default(),
        ]);
    }
    let mut out = table.render();
    if let Some(next) = page.next {
        let _ = writeln!(out, "next page: --after {next}");
    }
    Ok(out)
}

/// `show`: everything stored about one job.
pub(crate) async fn show(
    backend: &AnyBackend,
    json_out: bool,
    id: JobId,
) -> Result<String, Failure> {
    let job = backend.job(id).await?;
    if json_out {
        return json(&job);
    }
    Ok(describe(&job))
}

/// A job's record, field by field, then its payload, result and errors.
fn describe(job: &JobRecord) -> String {
    let status = match job.dead_reason() {
        Some(jobs::DeadReason::Fatal) => format!("{} (fatal error)", job.status),
        Some(jobs::DeadReason::OutOfAttempts) => format!("{} (out of attempts)", job.status),
        None => job.status.to_string(),
    };
    let lease = job.lease.as_ref().map_or_else(
        || NONE.to_string(),
        |l| format!("{} until {}", l.worker, format::time(l.expires_at)),
    );
    let fields = [
        ("id", job.id.to_string()),
        ("name", job.name.to_string()),
        ("queue", job.queue.to_string()),
        ("status", status),
        (
            "attempts",
            format!("{} of {}", job.attempt, job.max_attempts),
        ),
        ("priority", job.priority.to_string()),
        ("progress", format!("{}%", job.progress)),
        ("created", format::time(job.created_at)),
        ("run at", format::time(job.run_at)),
        ("started", format::opt_time(job.started_at)),
        ("finished", format::opt_time(job.finished_at)),
        ("lease", lease),
        ("tags", format::list(&job.tags)),
        (
            "unique key",
            job.unique_key.clone().unwrap_or_else(|| NONE.into()),
        ),
    ];
    let step = job.step.as_ref().map(|step| {
        let place = format::role(step.role);
        let id = step.workflow;
        (
            "workflow",
            format!("{id}, {place} (see: jobs workflow {id})"),
        )
    });
    let fields: Vec<(&str, String)> = fields.into_iter().chain(step).collect();
    let width = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (key, value) in &fields {
        let _ = writeln!(out, "{key:width$}  {value}");
    }
    let _ = writeln!(out, "payload:");
    out.push_str(&indent(&pretty(job.payload.get())));
    if !job.inputs.is_empty() {
        // A workflow step's payload is made of these when it runs.
        let _ = writeln!(out, "inputs:");
        for (slot, value) in &job.inputs {
            let _ = writeln!(out, "  slot {slot}: {}", value.get());
        }
    }
    match &job.result {
        Some(result) => {
            let _ = writeln!(out, "result:");
            out.push_str(&indent(&pretty(result.get())));
        }
        None => {
            let _ = writeln!(out, "result: {NONE}");
        }
    }
    if job.errors.is_empty() {
        let _ = writeln!(out, "errors: {NONE}");
    } else {
        let _ = writeln!(out, "errors:");
        for e in &job.errors {
            let _ = writeln!(
                out,
                "  attempt {} {} at {}: {}",
                e.attempt,
                e.kind,
                format::time(e.at),
                e.message
            );
            for cause in &e.chain {
                let _ = writeln!(out, "    caused by: {cause}");
            }
        }
    }
    out
}

/// Stored JSON, pretty-printed (as stored if it does not parse).
fn pretty(raw: &str) -> String {
    serde_json::from_str::<serde_json::Value>(raw)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| raw.to_string())
}

/// Each line of `text` indented by two spaces, each ending in a newline.
fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// What a `retry`, `cancel`, `delete` or `purge` changed.
#[derive(Debug, Serialize)]
struct Changed {
    action: Action,
    /// The job, when one was named by id.
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<JobId>,
    /// How many jobs changed.
    changed: u64,
}

/// `retry ID`, `cancel ID`, `delete ID`.
pub(crate) async fn manage_one(
    backend: &AnyBackend,
    json_out: bool,
    action: Action,
    id: JobId,
) -> Result<String, Failure> {
    match action {
        Action::Retry => backend.retry(id).await?,
        Action::Cancel => backend.cancel(id).await?,
        Action::Delete => backend.delete(id).await?,
    }
    if json_out {
        return json(&Changed {
            action,
            id: Some(id),
            changed: 1,
        });
    }
    Ok(format!("{} job {id}\n", action.past()))
}

/// `retry`, `cancel`, `delete` by filter, applied by the store.
pub(crate) async fn manage_all(
    backend: &AnyBackend,
    json_out: bool,
    action: Action,
    filter: &JobFilter,
) -> Result<String, Failure> {
    let changed = match action {
        Action::Retry => backend.retry_all(filter).await?,
        Action::Cancel => backend.cancel_all(filter).await?,
        Action::Delete => backend.delete_all(filter).await?,
    };
    if json_out {
        return json(&Changed {
            action,
            id: None,
            changed,
        });
    }
    Ok(format!("{} {}\n", action.past(), jobs_count(changed)))
}

/// What `purge` deleted.
#[derive(Debug, Serialize)]
struct Purged {
    status: JobStatus,
    /// Jobs that finished before this were deleted.
    before: Timestamp,
    /// How many.
    purged: u64,
}

/// `purge`: the `status` jobs that finished before `before`.
pub(crate) async fn purge(
    backend: &AnyBackend,
    json_out: bool,
    status: JobStatus,
    before: Timestamp,
) -> Result<String, Failure> {
    let purged = backend.purge(status, before).await?;
    if json_out {
        return json(&Purged {
            status,
            before,
            purged,
        });
    }
    Ok(format!(
        "purged {purged} {status} job{} that finished before {}\n",
        if purged == 1 { "" } else { "s" },
        format::time(before)
    ))
}

/// `schedules`: the recorded cron schedules.
pub(crate) async fn schedules(backend: &AnyBackend, json_out: bool) -> Result<String, Failure> {
    let schedules = backend.schedules().await?;
    if let Some(out) = json_or_none(&schedules, json_out, "no schedules") {
        return out;
    }
    let mut table = Table::new([
        "NAME",
        "QUEUE",
        "CRON",
        "TIME ZONE",
        "LAST TICK",
        "NEXT TICKS",
    ]);
    for s in &schedules {
        let next: Vec<String> = s.next.iter().map(|&t| format::time(t)).collect();
        table.row(vec![
            s.schedule.name.clone(),
            s.schedule.queue.clone(),
            s.schedule.expression.clone(),
            s.schedule.timezone.clone(),
            format::opt_time(s.last_tick),
            format::list(&next),
        ]);
    }
    Ok(table.render())
}

/// `workers`: the live workers and what each runs.
pub(crate) async fn workers(backend: &AnyBackend, json_out: bool) -> Result<String, Failure> {
    let workers = backend.workers().await?;
    if let Some(out) = json_or_none(&workers, json_out, "no workers") {
        return out;
    }
    let mut table = Table::new([
        "ID",
        "HOST",
        "PID",
        "QUEUES",
        "CONCURRENCY",
        "STARTED",
        "LAST SEEN",
        "RUNNING",
        "JOBS",
    ])
    .right(&[2, 4, 7]);
    for w in &workers {
        let info = &w.worker;
        table.row(vec![
            info.id.clone(),
            info.host.clone(),
            info.pid.to_string(),
            format::list(&info.queues),
            info.concurrency.to_string(),
            format::time(info.started_at),
            format::time(info.last_seen),
            w.running.len().to_string(),
            format::list(&w.running),
        ]);
    }
    Ok(table.render())
}

/// `stranded`: pending jobs no live worker runs.
pub(crate) async fn stranded(backend: &AnyBackend, json_out: bool) -> Result<String, Failure> {
    let stranded = backend.stranded().await?;
    if let Some(out) = json_or_none(&stranded, json_out, "no stranded jobs") {
        return out;
    }
    let mut table = Table::new(["QUEUE", "NAME", "JOBS", "OLDEST", "SINCE"]).right(&[2]);
    for s in &stranded {
        table.row(vec![
            s.queue.clone(),
            s.name.clone(),
            s.jobs.to_string(),
            s.oldest.to_string(),
            format::time(s.since),
        ]);
    }
    Ok(table.render())
}

/// A migrated schema and its version.
#[cfg(feature = "postgres")]
#[derive(Debug, Serialize)]
struct Migrated {
    schema: String,
    version: Option<i64>,
    recounted: bool,
}

/// `migrate`: applies the PostgreSQL migrations, counts the finished jobs again when asked,
/// and prints the schema's version.
pub(crate) async fn migrate(
    backend: &AnyBackend,
    recount: bool,
    json_out: bool,
) -> Result<String, Failure> {
    #[cfg(feature = "postgres")]
    if let Some(pg) = backend.downcast_ref::<jobs::postgres::PgBackend>() {
        pg.migrate().await?;
        if recount {
            pg.recount().await?;
        }
        let migrated = Migrated {
            schema: pg.schema_name().to_string(),
            version: pg.schema_version().await?,
            recounted: recount,
        };
        if json_out {
            return json(&migrated);
        }
        let version = migrated
            .version
            .map_or_else(|| NONE.to_string(), |v| v.to_string());
        let recounted = if recount {
            "; finished jobs counted again"
        } else {
            ""
        };
        return Ok(format!(
            "schema {} is at version {version}{recounted}\n",
            migrated.schema
        ));
    }
    let _ = (backend, recount, json_out);
    Err(Failure::Refused(
        "migrations are a PostgreSQL matter: this backend keeps no schema to migrate".into(),
    ))
}

/// One refresh of `watch --json`.
#[derive(Debug, Serialize)]
struct Snapshot {
    at: Timestamp,
    queues: Vec<QueueSummary>,
}

/// `watch`: the queues' counts, redrawn every `every` until Ctrl-C.
pub(crate) async fn watch(
    backend: &AnyBackend,
    json_out: bool,
    every: Duration,
) -> Result<(), Failure> {
    let stop = jobs::shutdown_signal();
    tokio::pin!(stop);
    loop {
        let queues = backend.queues().await?;
        let at = chrono::Utc::now();
        let out = if json_out {
            let mut line =
                serde_json::to_string(&Snapshot { at, queues }).map_err(jobs::Error::from)?;
            line.push('\n');
            line
        } else {
            let mut table = Table::new([
                "QUEUE",
                "WAITING",
                "PENDING",
                "SCHEDULED",
                "RUNNING",
                "COMPLETED",
                "DEAD",
                "CANCELLED",
            ])
            .right(&[1, 2, 3, 4, 5, 6, 7]);
            for q in &queues {
                let mut row = vec![q.name.clone()];
                row.extend(counts_cells(&q.counts));
                table.row(row);
            }
            format!(
                "\x1b[2J\x1b[H{}  (every {}, Ctrl-C to stop)\n\n{}",
                format::time(at),
                humantime::format_duration(every),
                table.render()
            )
        };
        crate::print(&out);
        tokio::select! {
            () = &mut stop => return Ok(()),
            () = tokio::time::sleep(every) => {}
        }
    }
}
