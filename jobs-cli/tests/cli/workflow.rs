//! `jobs workflow ID`, the WAITING counts of `stats` and `list --status waiting`, and `show` of
//! a step: an order workflow (reserve, then charge, then ship; a release undoes the
//! reservation) stored through the library, its first step run by a real worker, its second
//! failed for good through the store, read by the real binary at each point.

use std::time::{Duration, Instant};

use jobs::prelude::*;
use jobs::{
    JobId, JobRecord, JobStatus, Page, StepRole, Workflow, WorkflowId, WorkflowState,
    WorkflowStatus,
};
use jobs_core::{ErrorKind, ErrorReport};
use serde_json::Value;

use super::{assert_fails, Store};

/// The queue of the first step, which the test's worker runs.
const FIRST: &str = "cli_flow_first";
/// The queue of the later steps and of the compensation, which no worker runs.
const LATER: &str = "cli_flow_later";

/// Reserves stock for an order: its units.
#[job(queue = "cli_flow_first", name = "flow.reserve")]
async fn reserve(order: u64) -> Result<u64, JobError> {
    Ok(order * 10)
}

/// Charges for the reserved units: a receipt.
#[job(queue = "cli_flow_later", name = "flow.charge", attempts = 2)]
async fn charge(units: u64) -> Result<String, JobError> {
    Ok(format!("receipt for {units}"))
}

/// Ships the order once charged.
#[job(queue = "cli_flow_later", name = "flow.ship")]
async fn ship(receipt: String) -> Result<(), JobError> {
    let _ = receipt;
    Ok(())
}

/// Releases the reserved units (the compensation of `reserve`).
#[job(queue = "cli_flow_later", name = "flow.release")]
async fn release(units: u64) -> Result<(), JobError> {
    let _ = units;
    Ok(())
}

/// The statuses of the steps as `workflow --json` reads them, with its state.
fn read(s: &Store, id: &str) -> (WorkflowState, Vec<JobStatus>, WorkflowStatus) {
    let status: WorkflowStatus = s.json(&["workflow", id]);
    let steps = status.steps.iter().map(|st| st.job.status).collect();
    (status.state, steps, status)
}

/// The table rows of `workflow ID`, split on runs of two or more spaces (a cell may hold one).
fn rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .skip(2)
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect()
        })
        .collect()
}

/// The `waiting` count of `queue` in `stats --json`.
fn waiting(s: &Store, queue: &str) -> u64 {
    let stats: Vec<Value> = s.json(&["stats"]);
    let q = stats
        .iter()
        .find(|q| q["name"] == queue)
        .unwrap_or_else(|| panic!("{queue} listed: {stats:?}"));
    q["counts"]["waiting"].as_u64().expect("a waiting count")
}

/// A workflow read at each point of its life: waiting steps, the first step run by a worker,
/// the second dead (the compensation runs, the third is cancelled), then failed.
pub(super) fn workflow_steps_and_states(s: Store) {
    let handle = s
        .block(
            Workflow::start(Reserve::new(3))
                .compensate::<Release>()
                .then::<Charge>()
                .then::<Ship>()
                .enqueue(&s.backend),
        )
        .expect("the workflow is stored");
    let id = handle.id().to_string();

    // Stored: the first step pending, the others waiting.
    let (state, steps, stored) = read(&s, &id);
    assert_eq!(state, WorkflowState::Running);
    use JobStatus::{Cancelled, Completed, Dead, Pending, Waiting};
    assert_eq!(steps, [Pending, Waiting, Waiting, Waiting]);
    let roles: Vec<StepRole> = stored.steps.iter().map(|st| st.role).collect();
    assert_eq!(
        roles,
        [
            StepRole::Step { stage: 0 },
            StepRole::Step { stage: 1 },
            StepRole::Step { stage: 2 },
            StepRole::Compensation { stage: 0 },
        ]
    );
    let ids: Vec<JobId> = stored.steps.iter().map(|st| st.job.id).collect();
    assert_eq!(waiting(&s, LATER), 3);
    assert_eq!(waiting(&s, FIRST), 0);
    let table = s.ok(&["stats"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header[..3], ["QUEUE", "WAITING", "PENDING"], "{table}");
    let later_row: Vec<&str> = table
        .lines()
        .find(|l| l.starts_with(LATER))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(later_row[..3], [LATER, "3", "0"], "{table}");
    let listed: Page = s.json(&["list", "--status", "waiting"]);
    let mut listed: Vec<JobId> = listed.jobs.iter().map(|j| j.id).collect();
    listed.sort();
    let mut later = ids[1..].to_vec();
    later.sort();
    assert_eq!(listed, later, "the waiting steps");

    let text = s.ok(&["workflow", &id]);
    assert_eq!(
        text.lines().next(),
        Some(format!("workflow {id}: running").as_str())
    );
    let header: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["STAGE", "NAME", "STATUS", "ATTEMPT", "PROGRESS", "RESULT", "LAST", "ERROR", "ID"]
    );
    let expected = [
        ["0", "flow.reserve", "pending", "0/5"],
        ["1", "flow.charge", "waiting", "0/2"],
        ["2", "flow.ship", "waiting", "0/5"],
        ["undo 0", "flow.release", "waiting", "0/5"],
    ];
    let table = rows(&text);
    assert_eq!(table.len(), 4, "{text}");
    for ((row, want), job) in table.iter().zip(&expected).zip(&ids) {
        assert_eq!(row[..4], want[..], "{text}");
        assert_eq!(row[4..], ["0%", "-", "-", &job.to_string()], "{text}");
    }

    // A worker of the first queue runs the first step; its result is delivered to the next.
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = jobs::Worker::new(s.backend.clone())
        .queues([FIRST])
        .poll_interval(Duration::from_millis(50))
        .run_until(async {
            let _ = stopped.await;
        });
    let running = s.rt.spawn(worker);
    let deadline = Instant::now() + Duration::from_secs(15);
    while s.status(ids[0]) != Completed {
        assert!(Instant::now() < deadline, "the worker runs the first step");
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.send(()).unwrap();
    s.block(running).unwrap().unwrap();

    let (state, steps, _) = read(&s, &id);
    assert_eq!(state, WorkflowState::Running);
    assert_eq!(steps, [Completed, Pending, Waiting, Waiting]);
    assert_eq!(waiting(&s, LATER), 2);
    let charge: JobRecord = s.record(ids[1]);
    assert_eq!(
        charge.inputs.get(&0).map(|v| v.get()),
        Some("30"),
        "the first step's result is delivered"
    );
    let text = s.ok(&["workflow", &id]);
    let table = rows(&text);
    let progress = format!("{}%", s.record(ids[0]).progress);
    assert_eq!(
        table[0][..6],
        ["0", "flow.reserve", "completed", "1/5", &progress, "30"],
        "{text}"
    );
    assert_eq!(table[1][..3], ["1", "flow.charge", "pending"], "{text}");

    // `show` of a step names its workflow.
    let shown = s.ok(&["show", &ids[1].to_string()]);
    let line = format!("workflow    {id}, stage 1 (see: jobs workflow {id})");
    assert!(shown.lines().any(|l| l == line), "`{line}` in\n{shown}");
    assert!(
        shown.contains("\ninputs:\n  slot 0: 30\n"),
        "the delivered input: {shown}"
    );
    let shown = s.ok(&["show", &ids[3].to_string()]);
    assert!(
        shown.lines().any(|l| l.contains(&format!("{id}, undo 0"))),
        "{shown}"
    );
    let tags: Vec<String> = s.record(ids[1]).tags;
    assert!(tags.contains(&format!("workflow:{id}")), "{tags:?}");

    // The second step ends dead: the compensation runs, the third step is cancelled.
    let job = s.fetch(LATER);
    assert_eq!(job.record.id, ids[1]);
    s.fail(
        &job,
        ErrorReport::new(
            ErrorKind::Fatal,
            "card declined:   the issuer refused\nthe charge",
        ),
        false,
    );
    let (state, steps, status) = read(&s, &id);
    assert_eq!(state, WorkflowState::Compensating);
    assert_eq!(steps, [Completed, Dead, Cancelled, Pending]);
    assert_eq!(
        status.steps[1].job.errors[0].message,
        "card declined:   the issuer refused\nthe charge"
    );
    assert_eq!(waiting(&s, LATER), 0);
    let text = s.ok(&["workflow", &id]);
    assert_eq!(
        text.lines().next(),
        Some(format!("workflow {id}: compensating").as_str())
    );
    let table = rows(&text);
    assert_eq!(
        table[1][..7],
        [
            "1",
            "flow.charge",
            "dead",
            "1/2",
            "0%",
            "-",
            "card declined: the issuer refused the charge"
        ],
        "the error on one line: {text}"
    );
    assert_eq!(table[2][2], "cancelled", "{text}");
    assert_eq!(table[3][..3], ["undo 0", "flow.release", "pending"]);

    // The compensation completes: the workflow failed.
    assert_eq!(s.complete_next(LATER), ids[3]);
    let (state, steps, _) = read(&s, &id);
    assert_eq!(state, WorkflowState::Failed);
    assert_eq!(steps, [Completed, Dead, Cancelled, Completed]);
    assert!(s
        .ok(&["workflow", &id])
        .starts_with(&format!("workflow {id}: failed\n")));

    // Unknown ids exit 4, as unknown job ids do; malformed ones 2.
    let missing = WorkflowId::new().to_string();
    assert_fails(
        &s.run(&["workflow", &missing]),
        4,
        &format!("workflow {missing} not found"),
    );
    assert_fails(&s.run(&["--json", "workflow", &missing]), 4, "not found");
    assert_fails(
        &s.run(&["workflow", "order-42"]),
        2,
        "invalid value 'order-42'",
    );
}
