//! A durable server (AOF fsynced on every write) killed with SIGKILL and restarted in the middle
//! of a run: no acknowledged enqueue is lost, and the same worker resumes by itself (the shared
//! scenario of `jobs_core::testing::restart`).

use std::time::Instant;

use jobs_core::testing::restart::{nothing_acknowledged_is_lost, Restarted};
use jobs_redis::RedisBackend;

use crate::support::Server;

/// SIGKILL and restart of a durable server under a producer and a worker: every acknowledged
/// job is stored and completes, each ran at least once, and the worker, not restarted itself,
/// picks up jobs enqueued after the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_acknowledged_is_lost_when_redis_is_killed() {
    let server = Server::start_durable();
    let backend = RedisBackend::connect(&server.url()).await.unwrap();
    nothing_acknowledged_is_lost(backend, move || {
        // SIGKILL lands at once: from here on the server answers nothing until it is back.
        let down = Instant::now();
        Restarted {
            server: server.restart(),
            down,
        }
    })
    .await;
}
