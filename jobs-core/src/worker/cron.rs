//! Enqueues the ticks of periodic jobs; any number of workers may run this, each tick is stored once.

use std::sync::Arc;

use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, CronTickParams};
use crate::cron::Schedule;
use crate::model::{JobId, NewJob};
use crate::registry::JobType;

use super::shared::Shared;

/// Enqueues `job`'s ticks of `schedule` until `stop`.
pub(crate) async fn schedule_ticks(
    shared: Arc<Shared>,
    job: JobType,
    schedule: Schedule,
    stop: CancellationToken,
) {
    let options = job.options();
    let mut after = shared.clock.now();
    while let Some(tick) = schedule.next_after(after) {
        let wait = (tick - shared.clock.now()).to_std().unwrap_or_default();
        tokio::select! {
            biased;
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
        let now = shared.clock.now();
        let params = CronTickParams {
            schedule: job.name.to_string(),
            tick,
            job: NewJob {
                id: JobId::new(),
                name: job.name.to_string(),
                queue: options.queue.clone(),
                payload: RawValue::from_string("{}".into()).expect("valid JSON"),
                version: job.version,
                priority: options.priority,
                run_at: tick,
                max_attempts: options.max_attempts,
                backoff: options.backoff,
                timeout: options.timeout,
                unique_key: Some(format!("cron:{}:{}", job.name, tick.timestamp_millis())),
                tags: options.tags.clone(),
                trace_context: None,
                key_limits: None,
                coalesce: None,
                step: None,
            },
            now,
        };
        match shared.backend.enqueue_cron(params).await {
            Ok(Some(id)) => {
                tracing::debug!(job.name = job.name, job.id = %id, %tick, "cron tick enqueued")
            }
            Ok(None) => tracing::trace!(job.name = job.name, %tick, "cron tick already enqueued"),
            Err(e) => {
                tracing::warn!(error = %e, job.name = job.name, %tick, "could not enqueue cron tick")
            }
        }
        after = tick;
    }
}
