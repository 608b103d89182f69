//! Integration tests of the Redis backend: the conformance suite on one server and on a
//! three-node cluster that the tests start themselves, worker processes, and bad input.
//!
//! One server is expected at redis://127.0.0.1:6379 (or `JOBS_TEST_REDIS_URL`); each test works
//! under its own key prefix, and the keys of this process's tests are removed when it exits.

#[path = "redis/support.rs"]
mod support;

#[path = "redis/bad_input.rs"]
mod bad_input;
#[path = "redis/deliveries.rs"]
mod deliveries;
#[path = "redis/finished.rs"]
mod finished;
#[path = "redis/flow.rs"]
mod flow;
#[path = "redis/functions.rs"]
mod functions;
#[path = "redis/layout.rs"]
mod layout;
#[path = "redis/marker.rs"]
mod marker;
#[path = "redis/memory.rs"]
mod memory;
#[path = "redis/payloads.rs"]
mod payloads;
#[path = "redis/poison.rs"]
mod poison;
#[path = "redis/presence.rs"]
mod presence;
#[path = "redis/restart.rs"]
mod restart;
#[path = "redis/tags.rs"]
mod tags;
#[path = "redis/urls.rs"]
mod urls;
#[path = "redis/versions.rs"]
mod versions;
#[path = "redis/wakeups.rs"]
mod wakeups;
#[path = "redis/workflow.rs"]
mod workflow;

/// The conformance suite on one server.
mod single {
    jobs_core::conformance!(crate::support::single_backend);
}

/// The conformance suite on a three-master Redis Cluster.
mod cluster {
    jobs_core::conformance!(crate::support::cluster_backend);
}

/// Worker processes on one server: four drain 10,000 jobs exactly once, and a job of a worker
/// killed with SIGKILL runs again elsewhere once its lease lapses.
mod processes {
    jobs_core::conformance_processes!(crate::support::store_backend);
}
