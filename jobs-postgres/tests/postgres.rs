//! jobs-postgres against a real PostgreSQL (`postgres://postgres@127.0.0.1:5432/test`, or
//! `JOBS_TEST_POSTGRES_URL`). Every test gets a schema of its own, so all run in parallel.

#[path = "postgres/support.rs"]
mod support;

#[path = "postgres/bad_input.rs"]
mod bad_input;
#[path = "postgres/completion.rs"]
mod completion;
#[path = "postgres/counts.rs"]
mod counts;
#[path = "postgres/deliveries.rs"]
mod deliveries;
#[path = "postgres/durability.rs"]
mod durability;
#[path = "postgres/enqueue.rs"]
mod enqueue;
#[path = "postgres/fetch_size.rs"]
mod fetch_size;
#[path = "postgres/finished_since.rs"]
mod finished_since;
#[path = "postgres/flow.rs"]
mod flow;
#[path = "postgres/history.rs"]
mod history;
#[path = "postgres/listen.rs"]
mod listen;
#[path = "postgres/locks.rs"]
mod locks;
#[path = "postgres/operations.rs"]
mod operations;
#[path = "postgres/plans.rs"]
mod plans;
#[path = "postgres/poison.rs"]
mod poison;
#[path = "postgres/presence.rs"]
mod presence;
#[path = "postgres/restart.rs"]
mod restart;
#[path = "postgres/versions.rs"]
mod versions;
#[path = "postgres/workflow.rs"]
mod workflow;

/// The backend conformance suite of jobs-core, one `#[test]` per guarantee.
mod conformance {
    jobs_core::conformance!(crate::support::fresh_backend);
}

/// Worker processes on one schema: exactly once across four, and a SIGKILLed worker's job rerun.
mod processes {
    async fn connect(schema: String) -> jobs_postgres::PgBackend {
        crate::support::backend_in(&schema).await
    }
    jobs_core::conformance_processes!(connect);
}
