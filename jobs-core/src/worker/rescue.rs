//! Rescue: running jobs taken back from their workers, those whose lease lapsed or whose
//! worker is gone, a bounded batch per store call.

use crate::backend::{Backend, RescueParams, RescueTarget};
use crate::model::ErrorReport;

use super::shared::Shared;

/// Jobs rescued per call, so no call holds the store for long.
const CHUNK: usize = 1_000;

/// Rescues every job `target` names, [`CHUNK`] per call, recording `error`: how many, or
/// `None` (after a warning) when the store failed.
pub(super) async fn rescue(
    shared: &Shared,
    target: RescueTarget,
    error: ErrorReport,
) -> Option<usize> {
    let mut total = 0;
    loop {
        let params = RescueParams {
            target: target.clone(),
            now: shared.clock.now(),
            limit: CHUNK,
            error: error.clone(),
        };
        match shared.backend.rescue(params).await {
            Ok(ids) => {
                total += ids.len();
                super::metrics::rescued(&shared.backend, &ids).await;
                if ids.len() < CHUNK {
                    return Some(total);
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, ?target, "could not rescue jobs");
                return None;
            }
        }
    }
}
