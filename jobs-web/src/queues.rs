//! The queues as the overview and `api/queues` show them: [`Operations::queues`] and each
//! queue's jobs finished in the last hour.

use jobs_core::{AnyBackend, Backend, Error, FinishedParams, Operations, QueueSummary};
use serde::Serialize;

/// A queue's summary and its last hour's throughput.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct QueueView {
    /// Counts by status, paused state, last minute's throughput, limits.
    #[serde(flatten)]
    pub(crate) summary: QueueSummary,
    /// Its jobs finished (completed or cancelled) in the last hour and still retained.
    pub(crate) finished_last_hour: u64,
}

/// Every queue, by name.
pub(crate) async fn queues(backend: &AnyBackend) -> Result<Vec<QueueView>, Error> {
    let hour_ago = chrono::Utc::now() - chrono::Duration::hours(1);
    let mut views = Vec::new();
    for summary in backend.queues().await? {
        let finished_last_hour = backend
            .finished_since(FinishedParams {
                queue: summary.name.clone(),
                since: hour_ago,
            })
            .await?;
        views.push(QueueView {
            summary,
            finished_last_hour,
        });
    }
    Ok(views)
}
