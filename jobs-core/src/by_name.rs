//! Enqueueing by name: a job of a type this program does not link, with a JSON payload checked
//! against the JSON Schema its workers published to the catalog (see
//! [`catalog`](crate::JobTypeInfo)). The CLI's `jobs enqueue` and the dashboard's form use it.

use crate::backend::{Backend, JobTypesParams};
use crate::catalog::PublishedType;
use crate::clock::{Clock, SystemClock};
use crate::enqueue::Producer;
use crate::model::Enqueued;
use crate::Error;

/// The newest published version of the type `name`.
pub(crate) async fn newest<B: Backend + ?Sized>(b: &B, name: &str) -> Result<PublishedType, Error> {
    b.job_types(JobTypesParams {})
        .await?
        .into_iter()
        .filter(|t| t.info.name == name)
        .max_by_key(|t| t.info.version)
        .ok_or_else(|| Error::UnknownJobType(name.to_string()))
}

/// Every way `payload` breaks `schema`, each as "at `/path`: what is wrong"; empty when it
/// matches. A schema that does not compile is reported as such.
pub(crate) fn problems(schema: &serde_json::Value, payload: &serde_json::Value) -> Vec<String> {
    let validator = match jsonschema::validator_for(schema) {
        Ok(validator) => validator,
        Err(e) => return vec![format!("the published schema does not compile: {e}")],
    };
    validator
        .iter_errors(payload)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "/".to_string() } else { at };
            format!("at `{at}`: {e}")
        })
        .collect()
}

/// Stores a job of the newest published version of `name` with `payload`, due now, with the
/// type's defaults, once `payload` matches the type's schema.
pub(crate) async fn enqueue_json<B: Backend + ?Sized>(
    b: &B,
    name: &str,
    payload: serde_json::Value,
) -> Result<Enqueued, Error> {
    let published = newest(b, name).await?;
    let info = published.info;
    if let Some(schema) = &info.schema {
        let problems = problems(schema, &payload);
        if !problems.is_empty() {
            return Err(Error::InvalidPayload {
                name: info.name,
                version: info.version,
                problems,
            });
        }
    }
    let now = SystemClock.now();
    let job = info.new_job(serde_json::value::to_raw_value(&payload)?, now);
    b.enqueue_jobs(vec![job], now)
        .await?
        .pop()
        .ok_or_else(|| Error::backend("the backend stored no job"))
}
