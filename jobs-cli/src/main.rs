//! `jobs`: see and operate the jobs of any `jobs` backend from a shell.
//!
//! ```text
//! jobs --url postgres://app@db/shop?schema=billing stats
//! JOBS_URL=redis://127.0.0.1:6379 jobs list --queue email --status dead
//! ```
//!
//! Human output is aligned tables; `--json` prints one JSON document per command instead (the
//! serde forms of the library's types). Errors print one line, `jobs: <message>`, on stderr and
//! exit with 2 for a usage error, a bad URL or a payload that does not match its schema, 3 for
//! a server that cannot be reached (or, for `serve`, an address that cannot be listened on), 4
//! for an unknown job id, workflow id, job type or type version, 1 otherwise.
//!
//! `jobs workflow ID` shows a workflow's state and each of its steps (waiting for the steps
//! before them, running, completed or dead) and compensations; `jobs show ID` of a step names
//! its workflow. `stats` and `watch` count the waiting steps of each queue.
//!
//! `jobs types`, `jobs schema NAME` and `jobs enqueue NAME --payload JSON` read the catalog of
//! job types that workers publish to the store, so the CLI needs none of the application's code.
//!
//! `jobs serve --bind 127.0.0.1:8080` serves the web dashboard (`jobs_web`) of the backend.

#![forbid(unsafe_code)]

mod catalog;
mod commands;
mod format;
mod limit;
mod serve;
mod table;
mod workflow;

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use jobs::{JobFilter, JobId, JobStatus, WorkflowId};

/// See and operate the jobs of a `jobs` backend.
#[derive(Debug, Parser)]
#[command(name = "jobs", version, about)]
struct Cli {
    /// The backend's URL: postgres://…?schema=…, redis://…?prefix=…, memory://.
    #[arg(long, env = "JOBS_URL", global = true, hide_env_values = true)]
    url: Option<String>,
    /// Print one JSON document instead of tables.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

/// What to do.
#[derive(Debug, Subcommand)]
enum Command {
    /// Each queue's jobs by status (waiting workflow steps, pending, scheduled, running,
    /// completed, dead, cancelled), its jobs finished in the last minute, whether it is
    /// paused, how long its oldest pending job has waited, and its flow limits.
    Stats,
    /// The queues, how many jobs each holds, and their flow limits.
    Queues,
    /// Jobs matching a filter, oldest first, a page at a time.
    List(ListArgs),
    /// Everything stored about one job (and, for a workflow step, its workflow and the inputs
    /// delivered to it so far).
    Show {
        /// The job's id.
        id: JobId,
    },
    /// A workflow's state (running, completed, compensating, failed, cancelled) and each of
    /// its steps and compensations: stage, name, status, attempt, progress, result, last error
    /// and job id.
    Workflow {
        /// The workflow's id (every step job carries the tag `workflow:ID`).
        id: WorkflowId,
    },
    /// Puts dead or cancelled jobs back to pending: one by id, or every one matching a filter.
    Retry(ManageArgs),
    /// Cancels waiting or running jobs: one by id, or every one matching a filter.
    Cancel(ManageArgs),
    /// Deletes jobs for good: one by id, or every one matching a filter.
    Delete(ManageArgs),
    /// Deletes the finished jobs of one status that finished before a time.
    Purge(PurgeArgs),
    /// The cron schedules workers recorded, with their last and next ticks.
    Schedules,
    /// The live workers and the jobs each runs.
    Workers,
    /// Pauses a queue: workers in every process start none of its jobs until it is resumed.
    Pause {
        /// The queue.
        queue: String,
    },
    /// Resumes a paused queue.
    Resume {
        /// The queue.
        queue: String,
    },
    /// Shows a queue's flow limits, or sets them: the options given replace the whole set (a
    /// limit not given is removed), held by workers in every process from within a second.
    Limit(limit::LimitArgs),
    /// Pending jobs that no live worker can run (their name is unknown to their queue's workers).
    Stranded,
    /// The job types workers published: each version's name, queue and attempts, and when it
    /// was last published.
    Types,
    /// The JSON Schema of a job type's payload (of its newest published version unless
    /// --version is given); with --json, the whole published entry.
    Schema(catalog::SchemaArgs),
    /// Enqueues a job by name with a JSON payload, checked against the schema of the type's
    /// newest published version (every mismatch is listed, nothing stored); prints its id.
    Enqueue(catalog::EnqueueArgs),
    /// Creates or upgrades the job tables (PostgreSQL) and prints the schema's version.
    Migrate {
        /// Also count the finished jobs again from their rows (after workers of an older
        /// release ran beside this one; holds writes back while it reads).
        #[arg(long)]
        recount: bool,
    },
    /// Redraws the queues' counts until Ctrl-C (with --json: one line per refresh).
    Watch {
        /// How often to refresh.
        #[arg(long, default_value = "1s")]
        interval: humantime::Duration,
    },
    /// Serves the web dashboard: the queues, the jobs, the dead-letter set, the schedules and
    /// the workers, with retry, cancel, delete, pause and resume, until SIGTERM or Ctrl-C.
    ///
    /// It has no authentication of its own: bind it to loopback, or put it behind a proxy
    /// that authenticates, or pass --read-only.
    Serve(ServeArgs),
}

/// Where and how `serve` serves the dashboard.
#[derive(Debug, Args)]
struct ServeArgs {
    /// The address to listen on: an IP address and a port (port 0: any free one).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "IP:PORT")]
    bind: SocketAddr,
    /// Show no actions and refuse every write (each POST answers 403).
    #[arg(long)]
    read_only: bool,
}

/// The filter of `list`.
#[derive(Debug, Args)]
struct ListArgs {
    #[command(flatten)]
    filter: FilterArgs,
    /// Only jobs enqueued within this long (`1h`, `30m`, `2d`).
    #[arg(long)]
    since: Option<humantime::Duration>,
    /// At most this many jobs (at most 1000).
    #[arg(long, default_value_t = 50)]
    limit: usize,
    /// The page after this job: the `--after` the previous page printed.
    #[arg(long)]
    after: Option<JobId>,
}

/// The filters of `list` and of the filter forms of `retry`, `cancel` and `delete`.
#[derive(Debug, Args)]
struct FilterArgs {
    /// Only jobs of this queue.
    #[arg(long)]
    queue: Option<String>,
    /// Only jobs in this status (waiting, scheduled, pending, running, completed, dead,
    /// cancelled).
    #[arg(long)]
    status: Option<JobStatus>,
    /// Only jobs of this stored name.
    #[arg(long)]
    name: Option<String>,
    /// Only jobs carrying this tag.
    #[arg(long)]
    tag: Option<String>,
}

impl FilterArgs {
    /// The filter, and whether any part of it was given.
    fn filter(&self) -> (JobFilter, bool) {
        let mut filter = JobFilter::new();
        let mut any = false;
        if let Some(q) = &self.queue {
            filter = filter.queue(q);
            any = true;
        }
        if let Some(s) = self.status {
            filter = filter.status(s);
            any = true;
        }
        if let Some(n) = &self.name {
            filter = filter.name(n);
            any = true;
        }
        if let Some(t) = &self.tag {
            filter = filter.tag(t);
            any = true;
        }
        (filter, any)
    }
}

/// One job by id, or every job matching a filter.
#[derive(Debug, Args)]
struct ManageArgs {
    /// The job's id (or give a filter instead).
    #[arg(conflicts_with_all = ["queue", "status", "name", "tag", "all"])]
    id: Option<JobId>,
    #[command(flatten)]
    filter: FilterArgs,
    /// With no filter: every job (a filter form with no filter is refused without it).
    #[arg(long)]
    all: bool,
}

/// Which finished jobs `purge` deletes, and how old.
#[derive(Debug, Args)]
struct PurgeArgs {
    #[command(flatten)]
    which: PurgeStatus,
    /// Those that finished longer ago than this (`7d`, `12h`).
    #[arg(long)]
    older_than: humantime::Duration,
}

/// The one finished status `purge` deletes.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
struct PurgeStatus {
    /// Completed jobs.
    #[arg(long)]
    completed: bool,
    /// Dead jobs.
    #[arg(long)]
    dead: bool,
    /// Cancelled jobs.
    #[arg(long)]
    cancelled: bool,
}

impl PurgeStatus {
    fn status(&self) -> JobStatus {
        if self.completed {
            JobStatus::Completed
        } else if self.dead {
            JobStatus::Dead
        } else {
            JobStatus::Cancelled
        }
    }
}

/// Why a command failed, and so its exit code.
#[derive(Debug)]
enum Failure {
    /// An error of the library: its variant decides the code.
    Jobs(jobs::Error),
    /// The command line is wrong: exit 2.
    Usage(String),
    /// The command cannot apply here: exit 1.
    Refused(String),
    /// A resource the command needs cannot be had (an address to listen on): exit 3.
    Unavailable(String),
    /// What the command names does not exist (a job type's version): exit 4.
    Missing(String),
}

impl Failure {
    fn code(&self) -> u8 {
        match self {
            Failure::Jobs(jobs::Error::Invalid(_) | jobs::Error::InvalidPayload { .. })
            | Failure::Usage(_) => 2,
            Failure::Jobs(jobs::Error::Connect { .. }) | Failure::Unavailable(_) => 3,
            Failure::Jobs(
                jobs::Error::NotFound(_)
                | jobs::Error::WorkflowNotFound(_)
                | jobs::Error::UnknownJobType(_),
            )
            | Failure::Missing(_) => 4,
            Failure::Jobs(_) | Failure::Refused(_) => 1,
        }
    }

    fn message(&self) -> String {
        match self {
            Failure::Jobs(e) => e.to_string(),
            Failure::Usage(m)
            | Failure::Refused(m)
            | Failure::Unavailable(m)
            | Failure::Missing(m) => m.clone(),
        }
    }
}

impl From<jobs::Error> for Failure {
    fn from(e: jobs::Error) -> Self {
        Failure::Jobs(e)
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help, --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => return fail(&Failure::Usage(clap_message(&e))),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return fail(&Failure::Refused(format!("cannot start a runtime: {e}"))),
    };
    let result = runtime.block_on(run(cli));
    drop(runtime);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => fail(&failure),
    }
}

/// Prints `jobs: <message>` on one line of stderr and returns the failure's exit code.
fn fail(failure: &Failure) -> ExitCode {
    let message = failure.message();
    let line: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    eprintln!("jobs: {}", line.join(" "));
    ExitCode::from(failure.code())
}

/// A clap error on one line: its message without `error: `, the usage and the hints.
fn clap_message(e: &clap::Error) -> String {
    let text = e.to_string();
    let lines: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
        .collect();
    let line = lines.join(" ");
    line.strip_prefix("error: ").unwrap_or(&line).to_string()
}

/// Connects to the backend and runs the command.
async fn run(cli: Cli) -> Result<(), Failure> {
    let url = cli
        .url
        .as_deref()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| Failure::Usage("no backend URL: pass --url URL or set JOBS_URL".into()))?;
    let backend = jobs::connect(url).await?;
    let json = cli.json;
    if let Command::Watch { interval } = cli.command {
        let every = Duration::from(interval).max(Duration::from_millis(100));
        return commands::watch(&backend, json, every).await;
    }
    if let Command::Serve(args) = cli.command {
        return serve::serve(backend, args.bind, args.read_only).await;
    }
    let out = match cli.command {
        Command::Stats => commands::stats(&backend, json).await?,
        Command::Queues => commands::queues(&backend, json).await?,
        Command::List(args) => {
            let (mut filter, _) = args.filter.filter();
            if let Some(since) = args.since {
                let since = chrono::Duration::from_std(since.into())
                    .map_err(|e| Failure::Usage(format!("--since is too long: {e}")))?;
                filter = filter.created_after(chrono::Utc::now() - since);
            }
            commands::list(&backend, json, &filter, args.limit, args.after).await?
        }
        Command::Show { id } => commands::show(&backend, json, id).await?,
        Command::Workflow { id } => workflow::workflow(&backend, json, id).await?,
        Command::Retry(args) => manage(&backend, json, commands::Action::Retry, &args).await?,
        Command::Cancel(args) => manage(&backend, json, commands::Action::Cancel, &args).await?,
        Command::Delete(args) => manage(&backend, json, commands::Action::Delete, &args).await?,
        Command::Purge(args) => {
            let older = chrono::Duration::from_std(args.older_than.into())
                .map_err(|e| Failure::Usage(format!("--older-than is too long: {e}")))?;
            let before = chrono::Utc::now() - older;
            commands::purge(&backend, json, args.which.status(), before).await?
        }
        Command::Schedules => commands::schedules(&backend, json).await?,
        Command::Workers => commands::workers(&backend, json).await?,
        Command::Stranded => commands::stranded(&backend, json).await?,
        Command::Types => catalog::types(&backend, json).await?,
        Command::Schema(args) => catalog::schema(&backend, json, &args).await?,
        Command::Enqueue(args) => catalog::enqueue(&backend, json, &args).await?,
        Command::Pause { queue } => commands::pause(&backend, &queue, true, json).await?,
        Command::Resume { queue } => commands::pause(&backend, &queue, false, json).await?,
        Command::Limit(args) => limit::limit(&backend, json, &args).await?,
        Command::Migrate { recount } => commands::migrate(&backend, recount, json).await?,
        Command::Watch { .. } | Command::Serve(_) => unreachable!("handled above"),
    };
    print(&out);
    Ok(())
}

/// `retry`, `cancel` or `delete`: by id, or by filter (refused with no filter unless `--all`).
async fn manage(
    backend: &jobs::AnyBackend,
    json: bool,
    action: commands::Action,
    args: &ManageArgs,
) -> Result<String, Failure> {
    if let Some(id) = args.id {
        return commands::manage_one(backend, json, action, id).await;
    }
    let (filter, any) = args.filter.filter();
    if !any && !args.all {
        return Err(Failure::Usage(format!(
            "{} needs a job id or a filter (--queue, --status, --name, --tag); pass --all to {} every job",
            action.verb(),
            action.verb()
        )));
    }
    commands::manage_all(backend, json, action, &filter).await
}

/// Writes `out` to stdout; a closed pipe (`jobs list | head`) is not an error.
fn print(out: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush());
}
