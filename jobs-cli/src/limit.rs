//! `limit`: shows, sets or clears a queue's flow limits (concurrency, rate, maximum depth).

use clap::Args;
use jobs::{AnyBackend, Operations, QueueLimits, Rate};
use serde::Serialize;

use crate::commands::json;
use crate::Failure;

/// What `limit` does to one queue: with no option it shows the queue's limits.
#[derive(Debug, Args)]
pub(crate) struct LimitArgs {
    /// The queue.
    queue: String,
    /// At most N of the queue's jobs running at once, across every worker process (at least 1;
    /// to stop the queue, pause it).
    #[arg(long, value_name = "N")]
    concurrency: Option<u32>,
    /// At most N of the queue's jobs starting in any PERIOD (a sliding window): `1000/1s`,
    /// `10/1m`, `100/s`.
    #[arg(long, value_name = "N/PERIOD")]
    rate: Option<Rate>,
    /// At most N jobs waiting (pending or scheduled): enqueues beyond it are refused.
    #[arg(long, value_name = "N")]
    max_depth: Option<u64>,
    /// Removes every limit of the queue.
    #[arg(long, conflicts_with_all = ["concurrency", "rate", "max_depth"])]
    clear: bool,
}

impl LimitArgs {
    /// The limits to store, or `None` when the command only shows them. The options replace
    /// the whole set: a limit not given is removed.
    fn new_limits(&self) -> Option<QueueLimits> {
        let limits = QueueLimits {
            concurrency: self.concurrency,
            rate: self.rate,
            max_depth: self.max_depth,
        };
        (self.clear || limits.is_limited()).then_some(limits)
    }
}

/// A queue's limits, as `limit --json` prints them.
#[derive(Debug, Serialize)]
struct Limits<'a> {
    queue: &'a str,
    #[serde(flatten)]
    limits: QueueLimits,
}

/// `limit`: stores the limits given (all of them, replacing the queue's), or clears them, or
/// reads them; prints the queue's limits as they now are.
pub(crate) async fn limit(
    backend: &AnyBackend,
    json_out: bool,
    args: &LimitArgs,
) -> Result<String, Failure> {
    let queue = args.queue.as_str();
    let limits = match args.new_limits() {
        Some(limits) => {
            backend.set_queue_limits(queue, limits).await?;
            limits
        }
        None => stored(backend, queue).await?,
    };
    if json_out {
        return json(&Limits { queue, limits });
    }
    Ok(format!("queue {queue}: {limits}\n"))
}

/// `queue`'s stored limits (none for a queue the store does not know).
async fn stored(backend: &AnyBackend, queue: &str) -> Result<QueueLimits, Failure> {
    let queues = backend.queues().await?;
    Ok(queues
        .into_iter()
        .find(|q| q.name == queue)
        .map(|q| q.limits)
        .unwrap_or_default())
}
