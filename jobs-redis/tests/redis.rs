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
#[path = "redis/streams.rs"]
mod streams;
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

/// The checks of the suite that the layout on Redis Streams passes so far (it is being built:
/// see `docs/redis-streams.md`).
mod streams_conformance {
    jobs_core::conformance_only!(crate::support::streams_backend;
        enqueue_batches_of_hundreds_fetched_and_completed_in_one_call,
        fetch_racing_never_hands_out_a_job_twice,
        worker_never_runs_a_job_twice_across_two_workers,
        events_reach_the_subscribers_of_their_queue,
        liveness_ends_when_its_holder_lets_go,
        workers_heartbeat_records_live_workers,
        workers_expire_without_heartbeats,
        workers_deregister_forgets_a_worker,
        schedules_show_their_next_ticks,
        versions_published_are_listed_by_name_and_version,
        worker_refuses_to_start_listing_every_problem,
    );
}

/// Worker processes on one server: four drain 10,000 jobs exactly once, and a job of a worker
/// killed with SIGKILL runs again elsewhere once its lease lapses.
mod processes {
    jobs_core::conformance_processes!(crate::support::store_backend);
}
