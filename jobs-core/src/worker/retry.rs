//! Retrying a failed backend write of the worker a few times before giving up on it.

use std::future::Future;
use std::time::Duration;

use crate::Error;

/// Runs a backend write up to three times, pausing 50 ms then 250 ms between tries.
pub(crate) async fn with_retries<T, F, Fut>(mut write: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let mut pauses = [Duration::from_millis(50), Duration::from_millis(250)].into_iter();
    loop {
        match write().await {
            Ok(value) => return Ok(value),
            Err(e) => match pauses.next() {
                Some(pause) => {
                    tracing::debug!(error = %e, "backend write failed; retrying");
                    tokio::time::sleep(pause).await;
                }
                None => return Err(e),
            },
        }
    }
}
